"""Real ClickHouse errors, and a real proxy in front of it, sorted by clickhouse-connect's
fields: bad data, refused credentials, and a gateway whose ClickHouse is away."""

import http.client
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from schemas.errors import ConfigError
from services.clickhouse_client import connect
from services.clickhouse_errors import (
    BadDataError,
    ClickHouseUnavailableError,
    InsertError,
    classify,
)
from services.settings import ClickHouseSettings
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


class Gateway(ThreadingHTTPServer):
    """A reverse proxy to ClickHouse that answers 502 Bad Gateway while `down` is set, as a
    load balancer does when its backend is gone."""

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = urlsplit(upstream)
        self.down = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    server: Gateway

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.server.down.is_set():
            self._answer(502, [], b"Bad Gateway")
            return
        upstream = self.server.upstream
        connection = http.client.HTTPConnection(upstream.hostname or "", upstream.port)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
        connection.request(self.command, self.path, body=body, headers=headers)
        response = connection.getresponse()
        passed = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP]
        self._answer(response.status, passed, response.read())
        connection.close()

    def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


_HOP = {"transfer-encoding", "connection", "content-length", "keep-alive"}


@pytest.fixture
def gateway(endpoints: Endpoints) -> Iterator[Gateway]:
    server = Gateway(endpoints.clickhouse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_gateway_answering_502_means_clickhouse_is_unavailable(gateway: Gateway) -> None:
    client = connect(ClickHouseSettings(url=gateway.url))
    assert client.command("SELECT 1") == 1
    gateway.down.set()

    with pytest.raises(DatabaseError) as raised:
        client.command("INSERT INTO system.one (dummy) VALUES (0)")

    assert isinstance(classify(raised.value), ClickHouseUnavailableError)


def test_a_row_clickhouse_cannot_read_is_bad_data_with_its_code(
    endpoints: Endpoints, ch_database: str
) -> None:
    client = connect(ClickHouseSettings(url=endpoints.clickhouse, database=ch_database))
    client.command("CREATE TABLE t (id Int64) ENGINE = Memory")

    with pytest.raises(DatabaseError) as raised:
        client.command("INSERT INTO t FORMAT CSV", data=b"not a number\n")

    found = classify(raised.value)
    assert isinstance(found, BadDataError)
    assert found.code == raised.value.code
    assert isinstance(classify(_raised(client, "INSERT INTO missing VALUES (1)")), InsertError)


def test_refused_credentials_are_a_setting_naming_the_variables(endpoints: Endpoints) -> None:
    with pytest.raises(ConfigError, match="CDFBRIDGE_CLICKHOUSE__USERNAME and __PASSWORD"):
        connect(ClickHouseSettings(url=endpoints.clickhouse, username="nobody_here"))


def _raised(client: Any, statement: str) -> DatabaseError:
    with pytest.raises(DatabaseError) as raised:
        client.command(statement)
    return raised.value
