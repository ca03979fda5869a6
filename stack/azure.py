"""The Azure Storage emulator (Azurite, from npm) on loopback, blob service only, with one
container for tables: for proving ADLS (`abfs://`) reads against a real server.

Its account is the emulator's well-known one (devstoreaccount1), whose key is public.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from stack.errors import StackSetupError
from stack.process import Service
from stack.settings import LOOPBACK, StackSettings
from stack.tools import installed, mark_installed, run_logged, tool

PACKAGE = "azurite@3.35.0"
ACCOUNT = "devstoreaccount1"
# Published in Azurite's and Azure's documentation; it guards nothing outside the emulator.
ACCOUNT_KEY = (  # noqa: S105
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def azurite_blob(settings: StackSettings) -> Path:
    return settings.lib / "azurite" / "node_modules" / ".bin" / "azurite-blob"


def install(settings: StackSettings) -> None:
    """`npm install` Azurite into the stack's lib directory, once per pinned version."""
    target = settings.lib / "azurite"
    if installed(target, PACKAGE, azurite_blob(settings)):
        return
    npm = tool("npm", "install Node.js 18 or later with npm")
    target.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--prefix", str(target), "--no-audit", "--no-fund", PACKAGE]
    run_logged(argv, settings.lib / "azurite.npm.log", "installing Azurite")
    mark_installed(target, PACKAGE)


class Azure(Service):
    name = "azure"
    needs = ("azurite",)  # what `cdfbridge-stack fetch` gets for it

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.settings.azure_port}/{ACCOUNT}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.azure_port,)

    def prepare(self) -> None:
        if not os.access(azurite_blob(self.settings), os.X_OK):
            raise StackSetupError("Azurite is not installed; run: cdfbridge-stack fetch azurite")

    def command(self) -> list[str]:
        return [
            str(azurite_blob(self.settings)),
            "--blobHost",
            LOOPBACK,
            "--blobPort",
            str(self.settings.azure_port),
            "--location",
            str(self.dir / "data"),  # also marks the process as ours in /proc/PID/cmdline
            "--loose",
            "--skipApiVersionCheck",
            "--disableTelemetry",
        ]

    def probe(self) -> bool:
        socket.create_connection((LOOPBACK, self.settings.azure_port), timeout=2).close()
        return True

    def on_ready(self) -> None:
        """Create the tables' container unless it exists."""
        from pyarrow import fs

        store = fs.AzureFileSystem(
            account_name=ACCOUNT,
            account_key=ACCOUNT_KEY,
            blob_storage_authority=f"{LOOPBACK}:{self.settings.azure_port}",
            blob_storage_scheme="http",
        )
        store.create_dir(self.settings.azure_container)
