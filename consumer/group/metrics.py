"""Prometheus metrics, for the process and per topic, on one registry (served with /health
by services/health.py).

`Collectors` are the process's, one set however many topics it reads: the unlabeled ones
total the process, as with one topic; the `cdfbridge_consumer_topic_*` ones carry a `topic`
label, and so does the lag (with its partition). Each topic's pipeline updates them through
its own `Metrics`.
"""

from __future__ import annotations

import logging
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from consumer.freshness import BUCKETS, FRESHNESS, NewestRowAge
from consumer.group.batch import PartitionBatch, Written

log = logging.getLogger(__name__)
PREFIX = "cdfbridge_consumer_"
ROWS = f"{PREFIX}rows"
DEAD_LETTERS = f"{PREFIX}dead_letters"
RETRIES = f"{PREFIX}retries"
BUFFERED = f"{PREFIX}buffered_rows"
FAILED = f"{PREFIX}topic_failed"
STALE_AFTER_S = 60.0  # /health answers 503 once a topic has not polled Kafka for this long


def per_topic(name: str) -> str:
    """The per-topic family of a process total: cdfbridge_consumer_topic_rows for _rows."""
    return name.replace(PREFIX, f"{PREFIX}topic_", 1)


class Collectors:
    """The process's collectors; `topics` are the Metrics of each topic read."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.topics: dict[str, Metrics] = {}
        self.rows = Counter(ROWS, "Rows inserted into ClickHouse", registry=r)
        self.rows_per_second = Gauge(
            f"{PREFIX}rows_per_second",
            "Rows per second of the last batch written",
            registry=r,
        )
        self.batch_seconds = Histogram(
            f"{PREFIX}batch_seconds",
            "Time to write a batch, from the write pool to the end of its insert",
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.lag = Gauge(
            f"{PREFIX}lag",
            "Messages between the committed offset and the end of the partition",
            ["topic", "partition"],
            registry=r,
        )
        self.dead_letters = Counter(
            DEAD_LETTERS, "Messages sent to the dead-letter topic", registry=r
        )
        self.buffered = Gauge(BUFFERED, "Rows read from Kafka and not yet written", registry=r)
        self.buffered.set_function(lambda: sum(m.buffered_rows for m in self.topics.values()))
        self.retries = Counter(RETRIES, "Batches retried after a transient error", registry=r)
        topic = ["topic"]
        self.topic_rows = Counter(per_topic(ROWS), "Rows inserted, per topic", topic, registry=r)
        self.topic_dead_letters = Counter(
            per_topic(DEAD_LETTERS), "Messages dead-lettered, per topic", topic, registry=r
        )
        self.topic_retries = Counter(
            per_topic(RETRIES), "Back-offs after a transient error, per topic", topic, registry=r
        )
        self.topic_buffered = Gauge(
            per_topic(BUFFERED), "Rows read and not yet written, per topic", topic, registry=r
        )
        self.topic_failed = Gauge(
            FAILED, "1 once the topic stopped on an error (the others go on)", topic, registry=r
        )
        self.freshness = Histogram(
            FRESHNESS,
            "Seconds from a change's Delta commit to its row in ClickHouse (each batch's oldest)",
            topic,
            registry=r,
            buckets=BUCKETS,
        )
        self.newest_row = NewestRowAge(r)

    def problems(self) -> list[str]:
        """Why /health answers 503: topics stopped on an error, or not polling Kafka."""
        found = []
        for topic, metrics in self.topics.items():
            if metrics.failure is not None:
                found.append(f"topic {topic} stopped: {metrics.failure}")
            elif not metrics.healthy():
                found.append(f"topic {topic} stalled: Kafka not polled for {STALE_AFTER_S:.0f} s")
        return found


class Metrics:
    """One topic's metrics (its pipeline's), on the process's collectors: a fresh set of
    collectors when none are given."""

    def __init__(self, topic: str = "", collectors: Collectors | None = None) -> None:
        self.topic = topic
        self.collectors = c = collectors or Collectors()
        self.registry = c.registry
        self.last_poll = time.monotonic()
        self.buffered_rows = 0
        self.failure: str | None = None  # the error it stopped on
        self.finished = False  # stopped or caught up: no longer polls
        c.topic_failed.labels(topic).set(0)
        c.topics[topic] = self

    def polled(self) -> None:
        self.last_poll = time.monotonic()

    def buffered(self, rows: int) -> None:
        self.buffered_rows = rows
        self.collectors.topic_buffered.labels(self.topic).set(rows)

    def retried(self) -> None:
        self.collectors.retries.inc()
        self.collectors.topic_retries.labels(self.topic).inc()

    def failed(self, error: BaseException) -> None:
        self.failure = f"{type(error).__name__}: {str(error)[:300]}"
        self.collectors.topic_failed.labels(self.topic).set(1)

    def total(self, counter: str) -> int:
        """This topic's count of ROWS, DEAD_LETTERS or RETRIES, as a scrape reads it."""
        found = self.registry.get_sample_value(f"{per_topic(counter)}_total", {"topic": self.topic})
        return int(found or 0)

    def written(self, batch: PartitionBatch, written: Written, seconds: float, high: int) -> None:
        """A batch is in ClickHouse (`high`: its partition's end offset, -1 if unknown)."""
        c, topic = self.collectors, self.topic
        lag = max(0, high - batch.last_offset - 1) if high >= 0 else -1
        c.rows.inc(written.rows)
        c.topic_rows.labels(topic).inc(written.rows)
        c.dead_letters.inc(written.dead_letters)
        c.topic_dead_letters.labels(topic).inc(written.dead_letters)
        c.batch_seconds.observe(seconds)
        c.rows_per_second.set(written.rows / seconds if seconds > 0 else 0)
        c.lag.labels(batch.topic, str(batch.partition)).set(lag)
        if written.committed is not None:
            oldest, newest = written.committed
            c.freshness.labels(topic).observe(max(0.0, time.time() - oldest))
            c.newest_row.saw(topic, newest)
        log.info(
            "batch written",
            extra={
                "topic": batch.topic,
                "partition": batch.partition,
                "rows": written.rows,
                "dead_letters": written.dead_letters,
                "first_offset": batch.first_offset,
                "last_offset": batch.last_offset,
                "insert_ms": round(seconds * 1000, 1),
                "lag": lag,
            },
        )

    def summary(self, caught_up: bool, began: float, first_message: float) -> None:
        """The topic's last log line: what it wrote since `began` (monotonic clock)."""
        now = time.monotonic()
        log.info(
            "caught up" if caught_up else "stopped",
            extra={
                "topic": self.topic,
                "rows": self.total(ROWS),
                "dead_letters": self.total(DEAD_LETTERS),
                "seconds": round(now - began, 3),
                "seconds_from_first_message": round(now - first_message, 3)
                if first_message
                else 0.0,
            },
        )

    def healthy(self) -> bool:
        return self.finished or time.monotonic() - self.last_poll < STALE_AFTER_S
