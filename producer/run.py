"""`run()`: follow a Delta table (or each of [[tables]], producer/lake.py) and publish its
changes until stopped. `follow_table` does one table:

1. set up: Spark on the table, the topics, the transactional producer (which fences older
   ones and reads the progress), the topic's schemas in the registry; a resync asked for
   (producer/resync.py) starts a new generation with a snapshot at the latest version;
2. the reader thread runs follow() (producer/follow.py: poll, plan, read, encode, slice)
   one slice ahead of this one (producer/prefetch.py);
3. this thread sends each chunk's slices in one Kafka transaction with its progress record
   (producer/publish.py), then logs the chunk.

SIGTERM or SIGINT aborts the open transaction and returns 0. A resync request halts one
table's follow the same way, and its follow starts over.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from producer import metrics
from producer.encode import describe_key
from producer.follow import FOLLOW, follow, in_pool
from producer.prefetch import Prefetch
from producer.publish import Publisher
from producer.registry import TopicSchemas
from producer.resync import Resyncs
from producer.settings import ProducerSettings
from producer.slices import Slice
from producer.source import DeltaSource
from producer.start import starting_point
from producer.topics import ensure_topics
from schemas.errors import CdfBridgeError
from schemas.spark_session import session_for
from schemas.storage_errors import storage_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BATCH_ROWS = 65_536
APP_NAME = "cdfbridge-producer"
# Several tables share one session: Spark's FAIR scheduler takes their jobs' tasks in turns.
FAIR = {"spark.scheduler.mode": "FAIR"}


def run(
    settings: ProducerSettings,
    spark: SparkSession | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Publish until --until-version is reached (every table's, with [[tables]]) or a signal
    arrives (or stop is set); raises CdfBridgeErrors. spark: a session to use instead of
    starting one from settings.spark."""
    stop = stop or threading.Event()
    restore = _on_signals(stop)
    resyncs: Resyncs | None = None
    try:
        metrics.serve(settings.source.metrics_port)
        resyncs = Resyncs(settings.kafka.client_config(), stop)
        if not settings.tables:
            follow_table(settings, spark or _session(settings), resyncs)
            return
        from producer.lake import follow_all

        follow_all(settings, spark or _session(settings, FAIR), resyncs)
    finally:
        if resyncs is not None:
            resyncs.close()
        restore()


def _session(settings: ProducerSettings, conf: Mapping[str, str] | None = None) -> SparkSession:
    spark = settings.spark
    if conf:  # defaults under the user's own
        spark = spark.model_copy(update={"conf": {**conf, **spark.conf}})
    return session_for(spark, settings.storage, APP_NAME)


def follow_table(settings: ProducerSettings, spark: SparkSession, resyncs: Resyncs) -> None:
    """Publish settings.source's table until its --until-version or the process stops,
    starting over on each resync request; raises CdfBridgeErrors, the object store's
    failures named."""
    topic = settings.source.topic_name
    while True:
        halt = resyncs.rearm(topic)
        try:
            _follow(settings, spark, halt, resyncs)
        except CdfBridgeError:
            raise
        except Exception as exc:
            # Spark's and Delta's errors, raised here or in the reader: the store's are named.
            failure = storage_error(exc, settings.source.table, settings.storage.endpoint)
            if failure is None:
                raise
            raise failure from exc
        if resyncs.stop.is_set() or not halt.is_set():
            return  # stopping, or --until-version reached
        # else halted by a resync request: the next start takes it


def _follow(
    settings: ProducerSettings, spark: SparkSession, stop: threading.Event, resyncs: Resyncs
) -> None:
    config, topic = settings.source, settings.source.topic_name
    in_pool(spark, FOLLOW)
    source = DeltaSource(spark, config.table)
    source.check_change_feed()
    kafka = settings.kafka.client_config()
    limit = settings.kafka.max_message_bytes
    ensure_topics(kafka, topic, config.partitions, limit)
    publisher = Publisher(kafka, topic, config.tombstones, limit)
    position = publisher.start()
    resyncs.watch(topic, max(position.requested, position.generation.number))
    start, snapshot_at = starting_point(config, source, publisher, position)
    last = position.version
    metrics.event("start", table=config.table, topic=topic, last_published=last, next=start)
    schemas = TopicSchemas.connect(settings.schema_registry, topic, config.table)
    schemas.new_generation = position.resync_pending
    publisher.describe_key = lambda raw: describe_key(raw, schemas.key)
    changes = follow(source, schemas, config, start, snapshot_at, stop)
    try:
        # The prefetch's own stop: closing it must not stop the other tables.
        with Prefetch(changes, name=f"cdf-reader-{topic}") as slices:
            _publish_all(iter(slices), publisher, topic, stop)
    finally:
        publisher.close()


def _publish_all(
    slices: Iterator[Slice], publisher: Publisher, topic: str, stop: threading.Event
) -> None:
    """Each chunk in one transaction, its further slices pulled from slices as it is sent."""
    bar, total = metrics.ProgressBar(), 0
    for first in slices:
        chunk = first.chunk
        began, tally = time.monotonic(), _Tally()
        try:
            rows = publisher.publish(_batches(first, slices, tally), chunk.last, stop.is_set)
        except InterruptedError:
            rows = None
        if rows is None:
            metrics.event("aborted", topic=topic, versions=str(chunk), reason="stopping")
            break
        seconds = time.monotonic() - began
        total += rows
        metrics.ROWS.labels(topic).inc(rows)
        metrics.TRANSACTION.labels(topic).observe(seconds)
        metrics.TABLE_FAILED.labels(topic).set(0)
        metrics.BEHIND.labels(topic).set(max(0, first.head - chunk.last))
        metrics.event(
            "chunk_published",
            topic=topic,
            versions=str(chunk),
            rows=rows,
            rows_per_s=round(rows / seconds) if seconds else None,
            transaction_ms=round(seconds * 1000),
            read_ms=round(tally.read_s * 1000),  # Spark, in the reader thread, ahead of the send
            mib=round(tally.bytes / 2**20, 1),  # encoded, as held in the driver
        )
        bar.show(chunk.last, first.head, total)
    bar.done()


@dataclass
class _Tally:
    """What a chunk's slices added up to: Spark time and encoded bytes."""

    read_s: float = 0.0
    bytes: int = 0


def _batches(first: Slice, slices: Iterator[Slice], tally: _Tally) -> Iterator[pa.RecordBatch]:
    """Every batch of first's chunk, pulling its further slices from slices."""
    current: Slice | None = first
    while current is not None:
        tally.read_s += current.read_s
        tally.bytes += current.rows.nbytes
        yield from current.rows.to_batches(max_chunksize=BATCH_ROWS)
        if current.last_of_chunk:
            return
        current = next(slices, None)
    # The reader ended mid-chunk (stopping): raising makes the publisher abort the transaction.
    raise InterruptedError("reader stopped in the middle of a chunk")


def _on_signals(stop: threading.Event) -> Callable[[], None]:
    """Make SIGTERM and SIGINT set stop; returns what puts the old handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    signals = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
