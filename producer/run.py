"""`run()`: follow a Delta table (or each of [[tables]], producer/lake.py) and publish its
changes until stopped. `follow_table` does one table:

1. set up, Kafka's side in a thread beside Spark's (producer/startup.py logs each step):
   the topics and the transactional producer, which fences older ones and reads the
   progress; Spark's session and the table's Delta log; a resync asked for
   (producer/resync.py) starts a new generation with a snapshot at the latest version;
2. the reader thread runs follow() (producer/follow.py: poll, plan, read, encode, slice)
   one slice ahead of this one (producer/prefetch.py);
3. this thread sends each chunk's slices in one Kafka transaction with its progress record,
   a version too large for one in a transaction per slice (producer/transactions.py,
   producer/publish.py), then logs the chunk.

SIGTERM or SIGINT aborts the open transaction and returns 0. A resync request halts one
table's follow the same way, and its follow starts over.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING

from producer import metrics
from producer.encode import describe_key
from producer.follow import FOLLOW, follow, in_pool
from producer.prefetch import Prefetch
from producer.publish import Publisher
from producer.registry import TopicSchemas
from producer.resync import Resyncs
from producer.self_resync import resyncs_itself
from producer.settings import ProducerSettings
from producer.slices import Slice
from producer.source import DeltaSource
from producer.start import check_identity, starting_point
from producer.startup import KafkaSide, Waterfall, discard, kafka_side_in_thread, since_start_s
from producer.transactions import Tally, publish_chunk
from schemas.errors import CdfBridgeError
from schemas.progress import Identity
from schemas.spark_session import session_for
from schemas.storage_errors import storage_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
            steps = Waterfall(settings.source.topic_name)
            steps.log("python", since_start_s())  # interpreter, imports, settings
            kafka = kafka_side_in_thread(settings, steps)  # while Spark starts
            try:
                with steps.step("spark_session"):
                    spark = spark or _session(settings)
            except BaseException:
                discard(kafka)
                raise
            follow_table(settings, spark, resyncs, steps, kafka)
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


def follow_table(
    settings: ProducerSettings,
    spark: SparkSession,
    resyncs: Resyncs,
    steps: Waterfall | None = None,
    kafka: Future[KafkaSide] | None = None,
) -> None:
    """Publish settings.source's table until its --until-version or the process stops,
    starting over on each resync request; raises CdfBridgeErrors, the object store's
    failures named. kafka: its Kafka side, set up already (or being set up)."""
    topic = settings.source.topic_name
    steps, resynced = steps or Waterfall(topic), False
    while True:
        halt = resyncs.rearm(topic)
        try:
            _follow(settings, spark, halt, resyncs, steps, kafka)
        except CdfBridgeError as exc:
            if resynced or not resyncs_itself(exc, settings):
                raise
            resynced, kafka = True, None  # at most once a start: a failing resync stops
            continue
        except Exception as exc:
            # Spark's and Delta's errors, raised here or in the reader: the store's are named.
            failure = storage_error(exc, settings.source.table, settings.storage.endpoint)
            if failure is None:
                raise
            raise failure from exc
        if resyncs.stop.is_set() or not halt.is_set():
            return  # stopping, or --until-version reached
        # else halted by a resync request: the next start takes it
        kafka = None


def _follow(
    settings: ProducerSettings,
    spark: SparkSession,
    stop: threading.Event,
    resyncs: Resyncs,
    steps: Waterfall,
    kafka: Future[KafkaSide] | None,
) -> None:
    config, topic = settings.source, settings.source.topic_name
    in_pool(spark, FOLLOW)
    kafka = kafka or kafka_side_in_thread(settings, steps)  # beside the Delta log's load
    try:
        with steps.step("delta_log"):
            source = DeltaSource(spark, config.table)
        with steps.step("change_feed_check"):
            source.check_change_feed()
    except BaseException:
        discard(kafka)
        raise
    side = kafka.result()
    publisher, position = side.publisher, side.position
    try:
        identity = Identity(config.table, source.table_id)
        check_identity(position, identity, topic)
        if not side.fenced:  # the same table (its Delta id) named another way
            position = publisher.start()
        publisher.progress.identity = identity
        publisher.progress.hashed = tuple(config.hash_columns)
        resyncs.watch(topic, max(position.requested, position.generation.number))
        with steps.step("starting_point"):
            start, snapshot_at = starting_point(config, source, publisher, position)
        last = position.version
        metrics.event("start", table=config.table, topic=topic, last_published=last, next=start)
        schemas = TopicSchemas.connect(settings.schema_registry, topic, config.table)
        schemas.new_generation = position.resync_pending
        publisher.describe_key = lambda raw: describe_key(raw, schemas.key)
        resume = None if position.resync_pending else position.part
        changes = follow(source, schemas, config, start, snapshot_at, stop, steps, resume)
        # The prefetch's own stop: closing it must not stop the other tables.
        with Prefetch(changes, name=f"cdf-reader-{topic}") as slices:
            _publish_all(iter(slices), publisher, topic, stop, steps, position.version)
    finally:
        publisher.close()


def _publish_all(
    slices: Iterator[Slice],
    publisher: Publisher,
    topic: str,
    stop: threading.Event,
    steps: Waterfall,
    whole: int | None,
) -> None:
    """Each chunk in its transactions (producer/transactions.py), its further slices pulled
    from slices as it is sent; whole: the last version published whole before the first."""
    bar, total = metrics.ProgressBar(), 0
    for first in slices:
        chunk = first.chunk
        began, tally = time.monotonic(), Tally()
        try:
            rows = publish_chunk(first, slices, publisher, whole, stop.is_set, tally)
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
        steps.done()
        whole = chunk.last
        bar.show(chunk.last, first.head, total)
    bar.done()


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
