"""ClickHouse from the chdb-core wheel, served over HTTP and native TCP on loopback."""

from __future__ import annotations

import sys
from pathlib import Path

from stack.process import Service, http_ok

TEMPLATES = Path(__file__).parent / "templates"


class ClickHouse(Service):
    name = "clickhouse"

    @property
    def endpoint(self) -> str:
        return self.settings.clickhouse_url

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.settings.clickhouse_http_port, self.settings.clickhouse_tcp_port)

    def prepare(self) -> None:
        template = (TEMPLATES / "clickhouse.xml").read_text()
        (self.dir / "config.xml").write_text(
            template.format(
                http_port=self.settings.clickhouse_http_port,
                tcp_port=self.settings.clickhouse_tcp_port,
                listen_host=self.settings.listen_host,
            )
        )

    def command(self) -> list[str]:
        return [sys.executable, "-m", "stack.clickhouse_server", str(self.dir)]

    def probe(self) -> bool:
        return http_ok(f"{self.endpoint}/ping", expect=b"Ok.")
