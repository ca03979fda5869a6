"""Prometheus metrics and the container health endpoint, served on one port:
`/metrics` (Prometheus text) and `/health` (200 while the loop polls Kafka, else 503)."""

from __future__ import annotations

import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from consumer.batch import PartitionBatch, Written

log = logging.getLogger(__name__)
ROWS = "cdfbridge_consumer_rows"
DEAD_LETTERS = "cdfbridge_consumer_dead_letters"
RETRIES = "cdfbridge_consumer_retries"
STALE_AFTER_S = 60.0  # /health answers 503 once the loop has not polled Kafka for this long
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - scraped from outside the container


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.rows = Counter(ROWS, "Rows inserted into ClickHouse", registry=self.registry)
        self.rows_per_second = Gauge(
            "cdfbridge_consumer_rows_per_second",
            "Rows per second of the last batch, insert and commit included",
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "cdfbridge_consumer_batch_seconds",
            "Time to insert a batch and commit its offsets",
            registry=self.registry,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.lag = Gauge(
            "cdfbridge_consumer_lag",
            "Messages between the committed offset and the end of the partition",
            ["topic", "partition"],
            registry=self.registry,
        )
        self.dead_letters = Counter(
            DEAD_LETTERS,
            "Messages sent to the dead-letter topic",
            registry=self.registry,
        )
        self.buffered = Gauge(
            "cdfbridge_consumer_buffered_rows",
            "Rows read from Kafka and not yet written to ClickHouse",
            registry=self.registry,
        )
        self.retries = Counter(
            RETRIES,
            "Batches retried after a transient error",
            registry=self.registry,
        )
        self.last_poll = time.monotonic()

    def polled(self) -> None:
        self.last_poll = time.monotonic()

    def total(self, counter: str) -> int:
        """A counter's value (ROWS, DEAD_LETTERS, RETRIES), as a scrape reads it."""
        return int(self.registry.get_sample_value(f"{counter}_total") or 0)

    def written(self, batch: PartitionBatch, written: Written, seconds: float, high: int) -> None:
        """A batch is in ClickHouse (`high`: its partition's end offset, -1 if unknown)."""
        lag = max(0, high - batch.last_offset - 1) if high >= 0 else -1
        self.rows.inc(written.rows)
        self.dead_letters.inc(written.dead_letters)
        self.batch_seconds.observe(seconds)
        self.rows_per_second.set(written.rows / seconds if seconds > 0 else 0)
        self.lag.labels(batch.topic, str(batch.partition)).set(lag)
        log.info(
            "batch written",
            extra={
                "partition": batch.partition,
                "rows": written.rows,
                "dead_letters": written.dead_letters,
                "first_offset": batch.first_offset,
                "last_offset": batch.last_offset,
                "insert_ms": round(seconds * 1000, 1),
                "lag": lag,
            },
        )

    def healthy(self) -> bool:
        return time.monotonic() - self.last_poll < STALE_AFTER_S

    def serve(self, port: int) -> ThreadingHTTPServer:
        """Start the HTTP endpoint on a daemon thread; shut it down with `.shutdown()`."""
        server = ThreadingHTTPServer((ALL_INTERFACES, port), _handler(self))
        threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
        return server


def _handler(metrics: Metrics) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            if self.path.startswith("/metrics"):
                self._reply(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
            elif self.path.startswith("/health"):
                ok = metrics.healthy()
                self._reply(200 if ok else 503, b"ok\n" if ok else b"stalled\n", "text/plain")
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
