"""How old the replica is, in seconds of Delta time: per topic, the time from a change's
commit (`_commit_timestamp`) to its row being in ClickHouse, and the age of the newest row.

- The Python consumer reads the commit time of a batch's first and last values (two Avro
  decodes a batch, none per row) once the batch is inserted: the first's is observed in
  `cdfbridge_consumer_topic_freshness_seconds` (the batch's oldest change), the last's is
  the topic's newest row.
- A Kafka-engine table's newest row is read from the table itself by the watch
  (consumer/kafka_engine/watch.py), as `max(_commit_timestamp)`.
`cdfbridge_consumer_topic_newest_row_age_seconds` is computed when scraped: it grows while
nothing arrives, which is what an alert on a stalled pipeline needs.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import fastavro
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from consumer.group.registry import HEADER, Schemas, schema_id
from schemas.changes import COMMIT_TIMESTAMP

log = logging.getLogger(__name__)
FRESHNESS = "cdfbridge_consumer_topic_freshness_seconds"
NEWEST_ROW_AGE = "cdfbridge_consumer_topic_newest_row_age_seconds"
BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600)


class NewestRowAge(Collector):
    """The age of each topic's newest row in ClickHouse, computed when scraped."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.newest: dict[str, float] = {}  # topic -> commit time of its newest row, epoch s
        registry.register(self)

    def saw(self, topic: str, committed_s: float) -> None:
        self.newest[topic] = max(committed_s, self.newest.get(topic, committed_s))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        found = GaugeMetricFamily(
            NEWEST_ROW_AGE,
            "Seconds since the Delta commit of the newest row in ClickHouse, per topic",
            labels=["topic"],
        )
        now = time.time()
        for topic, committed in sorted(self.newest.items()):
            found.add_metric([topic], max(0.0, now - committed))
        yield found


def commit_times(values: Sequence[bytes], schemas: Schemas) -> tuple[float, float] | None:
    """The commit times (epoch s) of the first and the last of `values`, or None where a
    value's schema is unknown or has no commit time."""
    if not values:
        return None
    first, last = _committed(values[0], schemas), _committed(values[-1], schemas)
    return None if first is None or last is None else (first, last)


def _committed(value: bytes, schemas: Schemas) -> float | None:
    """The value's commit time; None where it cannot be read. Read after the batch is in
    ClickHouse, for a metric: nothing here may fail a batch already written."""
    try:
        found = schema_id(value)
        parsed = None if found is None else schemas.parsed(found)
        if parsed is None:
            return None
        record: Any = fastavro.schemaless_reader(io.BytesIO(value[HEADER:]), parsed, None)
    except Exception:  # noqa: BLE001 - a metric's read, after the write: never the batch's failure
        log.debug("no commit time read from a value", exc_info=True)
        return None
    stamp = record.get(COMMIT_TIMESTAMP) if isinstance(record, dict) else None
    return stamp.timestamp() if isinstance(stamp, datetime) else None
