"""An S3 server (MinIO, built from its Go module) on loopback, with one bucket for tables.

Its credentials are generated on first start and kept in the state directory, one file per
key (mode 0600), so `cdfbridge-stack env` can point at them without printing them.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from stack.errors import StackSetupError
from stack.process import Service, http_ok
from stack.settings import LOOPBACK, StackSettings
from stack.tools import installed, mark_installed, run_logged, tool

MODULE = "github.com/minio/minio"
# Pinned for reproducible builds: `go list -m github.com/minio/minio@latest` on 2026-11-23.
VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"


def minio_binary(settings: StackSettings) -> Path:
    return settings.minio_binary or settings.lib / "minio" / "minio"


def build(settings: StackSettings) -> None:
    """`go install` MinIO into the stack's lib directory, once per pinned version.

    About 6 minutes and 1.5 GB of memory on 2 cores the first time; Go's caches make a
    rebuild fast. Skipped when settings.minio_binary names a binary of one's own.
    """
    if settings.minio_binary is not None:
        if not os.access(settings.minio_binary, os.X_OK):
            raise StackSetupError(
                f"CDFBRIDGE_STACK_MINIO_BINARY={settings.minio_binary} is not an executable file"
            )
        return
    target = settings.lib / "minio"
    if installed(target, VERSION, minio_binary(settings)):
        return
    go = tool(
        "go",
        "the local S3 server (MinIO) is built with it: install Go 1.24 or later, or set "
        "CDFBRIDGE_STACK_MINIO_BINARY to a minio binary",
    )
    target.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOBIN": str(target), "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    log = settings.lib / "minio.go.log"
    run_logged([go, "install", f"{MODULE}@{VERSION}"], log, "building MinIO", env)
    mark_installed(target, VERSION)


class S3(Service):
    name = "s3"
    needs = ("minio",)  # what `cdfbridge-stack fetch` gets for it

    @property
    def endpoint(self) -> str:
        return self.settings.s3_url

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.s3_port,)

    @property
    def access_key_path(self) -> Path:
        return self.dir / "access_key_id"

    @property
    def secret_key_path(self) -> Path:
        return self.dir / "secret_access_key"

    def credentials(self) -> tuple[str, str]:
        """(access key id, secret access key), generated on first use."""
        for path, value in (
            (self.access_key_path, f"cdfbridge-{secrets.token_hex(4)}"),
            (self.secret_key_path, secrets.token_urlsafe(24)),
        ):
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch(mode=0o600)
                path.write_text(value)
        return self.access_key_path.read_text(), self.secret_key_path.read_text()

    def prepare(self) -> None:
        if not os.access(minio_binary(self.settings), os.X_OK):
            raise StackSetupError("MinIO is not built; run: cdfbridge-stack fetch minio")
        self.credentials()

    def command(self) -> list[str]:
        return [
            str(minio_binary(self.settings)),
            "server",
            str(self.dir / "data"),  # also marks the process as ours in /proc/PID/cmdline
            "--address",
            f"{LOOPBACK}:{self.settings.s3_port}",
            "--quiet",
        ]

    def environment(self) -> dict[str, str]:
        user, password = self.credentials()
        return {
            "MINIO_ROOT_USER": user,
            "MINIO_ROOT_PASSWORD": password,
            "MINIO_BROWSER": "off",  # no web console, so no second port
            "MINIO_UPDATE": "off",
        }

    def probe(self) -> bool:
        return http_ok(f"{self.endpoint}/minio/health/live")

    def on_ready(self) -> None:
        """Create the tables' bucket unless it exists."""
        from pyarrow import fs

        user, password = self.credentials()
        store = fs.S3FileSystem(
            access_key=user,
            secret_key=password,
            endpoint_override=self.endpoint,
            region="us-east-1",
            allow_bucket_creation=True,
        )
        store.create_dir(self.settings.s3_bucket)
