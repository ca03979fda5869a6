"""The process's HTTP endpoint, one port for every topic it reads: `/metrics` (Prometheus
text) and `/health`: 200 `ok` while every topic polls Kafka, else 503 with a line per topic
that stopped on an error or stalled."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - scraped from outside the container


class Health(Protocol):
    """What the endpoint serves: a registry of metrics, and why the process is unhealthy."""

    registry: CollectorRegistry

    def problems(self) -> list[str]: ...


def serve(collectors: Health, port: int) -> ThreadingHTTPServer:
    """Start the HTTP endpoint on a daemon thread; shut it down with `.shutdown()`."""
    server = ThreadingHTTPServer((ALL_INTERFACES, port), _handler(collectors))
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


def _handler(collectors: Health) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            if self.path.startswith("/metrics"):
                self._reply(200, generate_latest(collectors.registry), CONTENT_TYPE_LATEST)
            elif self.path.startswith("/health"):
                problems = collectors.problems()
                body = "".join(f"{line}\n" for line in problems) or "ok\n"
                self._reply(503 if problems else 200, body.encode(), "text/plain")
            else:
                self._reply(404, b"not found\n", "text/plain")

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return  # scrapes are not worth a log line

    return Handler
