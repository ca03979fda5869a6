"""Prometheus metrics and the structured log line of each published chunk."""

from __future__ import annotations

import json
import logging

from prometheus_client import Counter, Gauge, Histogram, start_http_server

ROWS = Counter("cdfbridge_producer_rows_published", "Changes published to Kafka", ["topic"])
BEHIND = Gauge(
    "cdfbridge_producer_versions_behind", "Table head minus last published version", ["topic"]
)
TRANSACTION = Histogram(
    "cdfbridge_producer_transaction_seconds",
    "Time from first send to commit of a chunk's transaction",
    ["topic"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
TABLE_FAILED = Gauge(
    "cdfbridge_producer_table_failed",
    "1 while the table's last attempt failed and it waits to be retried, else 0",
    ["topic"],
)
TABLE_FAILURES = Counter(
    "cdfbridge_producer_table_failures", "Times following the table failed alone", ["topic"]
)

log = logging.getLogger("cdfbridge.producer")


CYCLE = Histogram(
    "cdfbridge_producer_cycle_seconds",
    "One cycle's Spark job over the reads of the tables at their heads",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
)
CYCLE_TABLES = Histogram(
    "cdfbridge_producer_cycle_tables",
    "Tables whose reads one cycle collected",
    buckets=(1, 2, 5, 10, 20, 50, 100),
)
READS = Counter(
    "cdfbridge_producer_change_reads",
    "Reads of a table's changes, by reader: files (its commits' own files), delta (Delta's"
    " change-feed reader) or public (Delta's public API: a catalog table, or this Delta lacks"
    " what the others use)",
    ["reader"],
)


def serve(port: int | None) -> None:
    if port:
        start_http_server(port)


def event(name: str, level: int = logging.INFO, **fields: object) -> None:
    """One JSON log line: easy to grep by eye and to ship to a log store."""
    log.log(level, json.dumps({"event": name, **fields}, default=str))
