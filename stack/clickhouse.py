"""ClickHouse from the chdb-core wheel, served over HTTP and native TCP on loopback."""

from __future__ import annotations

import sys
from pathlib import Path

from stack.credentials import CLICKHOUSE_USER, Credentials, sha256_hex
from stack.process import Service, http_ok

TEMPLATES = Path(__file__).parent / "templates"


class ClickHouse(Service):
    name = "clickhouse"

    @property
    def endpoint(self) -> str:
        return self.settings.clickhouse_url

    @property
    def plain_url(self) -> str:
        """The server's own HTTP URL (the secured stack's proxy is in front of `endpoint`)."""
        return self.settings.clickhouse_plain_url

    @property
    def ports(self) -> tuple[int, ...]:
        """HTTP, then native TCP."""
        return (self.settings.clickhouse_http_port, self.settings.clickhouse_tcp_port)

    def prepare(self) -> None:
        http_port, tcp_port = self.ports
        template = (TEMPLATES / "clickhouse.xml").read_text()
        (self.dir / "config.xml").write_text(
            template.format(
                http_port=http_port,
                tcp_port=tcp_port,
                listen_host=self.settings.listen_host,
                extra=self.extra_config(),
            )
        )

    def extra_config(self) -> str:
        """What config.xml adds to the plain server's: the secured stack's, here."""
        return self._secure_config()

    def _secure_config(self) -> str:
        """The secured stack's: a named user with a password, `default` reduced,
        and TLS trust in the stack's CA for the Kafka engine and the registry."""
        if not self.settings.secure:
            return ""
        credentials = Credentials(self.settings)
        credentials.ensure()
        users = (TEMPLATES / "clickhouse-users.xml").read_text()
        (self.dir / "users.xml").write_text(
            users.format(
                user=CLICKHOUSE_USER,
                password_sha256_hex=sha256_hex(credentials.password("clickhouse")),
            )
        )
        return (TEMPLATES / "clickhouse-secure.xml").read_text().format(ca=credentials.ca_path)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "stack.clickhouse_server", str(self.dir)]

    def probe(self) -> bool:
        # The server's own port: /ping asks no credentials, and the proxy has its own probe.
        return http_ok(f"{self.plain_url}/ping", expect=b"Ok.")
