"""The secured stack (`cdfbridge-stack up --secure`) for tests: its services started once per
module, the settings `cdfbridge-stack env --secure` exports, and its secrets, to search every
output for."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from services.settings import KafkaConfig, KafkaSettings
from stack import services
from stack.credentials import Credentials
from stack.settings import StackSettings

SECRET_FILES = ("kafka", "kafka-admin", "clickhouse", "registry")


@dataclass
class Secured:
    settings: StackSettings
    env: dict[str, str]  # CDFBRIDGE_* as `cdfbridge-stack env --secure` exports them
    secrets: dict[str, str]  # every password of the stack, by name
    # Every command's output so far, searched for the secrets at the end.
    outputs: list[str] = field(default_factory=list)

    def run(
        self, module: str, *args: str, env: dict[str, str] | None = None, timeout_s: float = 240
    ) -> subprocess.CompletedProcess[str]:
        """`python -m module args` with the secured settings (and env over them)."""
        done = subprocess.run(
            [sys.executable, "-m", module, *args],
            env=self.environment(env),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        self.outputs.append(done.stdout + done.stderr)
        return done

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """Ours alone: CDFBRIDGE_* settings of the environment are left out."""
        base = {k: v for k, v in os.environ.items() if not k.startswith("CDFBRIDGE_")}
        return base | self.env | (extra or {})

    def clickhouse(self) -> Any:
        import clickhouse_connect

        return clickhouse_connect.get_client(
            dsn=self.env["CDFBRIDGE_CLICKHOUSE__URL"],
            username=self.env["CDFBRIDGE_CLICKHOUSE__USERNAME"],
            password=self.env["CDFBRIDGE_CLICKHOUSE__PASSWORD"],
            ca_cert=self.env["CDFBRIDGE_CLICKHOUSE__SSL_CA_LOCATION"],
        )

    def kafka_config(self) -> KafkaConfig:
        """librdkafka's settings for the secured Kafka, from the exported ones."""
        prefix = "CDFBRIDGE_KAFKA__"
        fields = {k.removeprefix(prefix).lower(): v for k, v in self.env.items() if prefix in k}
        return KafkaSettings(**fields).client_config()

    def leaks(self, texts: Sequence[str | bytes]) -> list[str]:
        """`secret name in text #i` for every secret found in texts."""
        found = []
        for index, text in enumerate(texts):
            raw = text if isinstance(text, bytes) else text.encode()
            for name, secret in self.secrets.items():
                if secret.encode() in raw:
                    found.append(f"{name} password in text #{index}: {raw[:200]!r}")
        return found


@contextmanager
def secured_stack() -> Iterator[Secured]:
    """Start what is not running of the secured stack; stop what this started."""
    settings = StackSettings(secure=True)
    already_up = {s.name for s in services.status(settings) if s.ready}
    services.up(settings)
    exported = subprocess.run(
        [sys.executable, "-m", "stack", "env", "--secure"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # As a user would: evaluated by the shell, which reads the password files.
    shell = subprocess.run(
        ["bash", "-c", f'{exported}\nenv -0 | grep -z "^CDFBRIDGE_"'],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("CDFBRIDGE_")},
    ).stdout
    env = dict(item.split("=", 1) for item in shell.split("\0") if item)
    credentials = Credentials(settings)
    secrets = {name: credentials.password(name) for name in SECRET_FILES}
    try:
        found = Secured(settings, env, secrets, [exported])
        yield found
    finally:
        services.down(settings, [n for n in services.NAMES if n not in already_up])
