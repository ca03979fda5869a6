"""`follow_table`: follow one table and publish its changes until stopped, the same code
whether the process follows one table or a lake of them (producer/lake/lake.py):

1. set up, Kafka's side in a thread beside Spark's (producer/lake/startup.py logs each step):
   the topics, the process's transactional producers started, the table taken over from
   the producer its progress names (producer/publish/takeover.py), the progress read, at a
   process's start for every table together while Spark starts; the table's Delta log; a resync asked for (producer/resync/resync.py) starts a new
   generation with a snapshot at the latest version;
2. the reader thread runs follow() (producer/lake/follow.py: poll, plan, read, encode, slice)
   one slice ahead of this one (producer/lake/prefetch.py); reads at the table's head are
   collected in the process's cycle with the other tables' (producer/read/cycle.py);
3. this thread hands each chunk's slices, with its progress record, to one Kafka
   transaction that other tables' chunks may share (producer/publish/transactor.py), a version too
   large for one to a transaction per slice (producer/publish/transactions.py), then logs it.

A resync request halts the table's follow, and its follow starts over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING

from producer import metrics
from producer.encode.encode import describe_key
from producer.encode.registry import TopicSchemas
from producer.encode.slices import Slice
from producer.errors import TopicRecreatedError
from producer.follow.probes import Probes
from producer.lake.follow import follow
from producer.lake.prefetch import Prefetch
from producer.lake.progress import ProgressBar
from producer.lake.start import check_identity, check_topic, starting_point
from producer.lake.startup import KafkaSide, discard, kafka_side, kafka_side_in_thread
from producer.pools import FOLLOW, in_pool
from producer.publish.publish import Publisher, Transactions
from producer.publish.transactions import Tally, publish_chunk
from producer.read.cycle import Cycle
from producer.read.source import DeltaSource
from producer.resync.resync import Resyncs
from producer.resync.self_resync import resyncs_itself
from producer.settings import ProducerSettings
from producer.steps import Waterfall
from schemas.errors import CdfBridgeError
from schemas.progress import Identity
from services.storage_errors import storage_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def follow_table(
    settings: ProducerSettings,
    spark: SparkSession,
    resyncs: Resyncs,
    cycle: Cycle,
    steps: Waterfall | None = None,
    kafka: Future[KafkaSide | None] | None = None,
    started: Callable[[], None] = lambda: None,
    transactions: Transactions | None = None,
    probes: Probes | None = None,
) -> None:
    """Publish settings.source's table until its --until-version or the process stops,
    starting over on each resync request; raises CdfBridgeErrors, the object store's
    failures named. cycle: where its reads at the head are collected; kafka: its Kafka
    side, set up already (or being set up); started: told once its first read is done or
    waits in the cycle, or once it finds nothing to read; transactions: the process's
    transactional producers (None: the table's own); probes: where its looks for new
    commits are grouped with the other tables'."""
    topic = settings.source.topic_name
    steps, resynced = steps or Waterfall(topic), False
    while True:
        halt = resyncs.rearm(topic)
        try:
            _follow(
                settings, spark, halt, resyncs, cycle, steps, kafka, started, transactions, probes
            )
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
    cycle: Cycle,
    steps: Waterfall,
    kafka: Future[KafkaSide | None] | None,
    started: Callable[[], None],
    transactions: Transactions | None,
    probes: Probes | None,
) -> None:
    config, topic = settings.source, settings.source.topic_name
    in_pool(spark, FOLLOW)
    kafka = kafka or kafka_side_in_thread(settings, steps, transactions)  # beside the log's load
    try:
        with steps.step("delta_log"):
            source = DeltaSource(spark, config.table, config.read_commit_files)
        with steps.step("change_feed_check"):
            source.check_change_feed()
    except BaseException:
        discard(kafka)
        raise
    side = kafka.result() or kafka_side(settings, steps, transactions)  # one set up alone
    publisher, position = side.publisher, side.position
    try:
        identity = Identity(config.table, source.table_id)
        check_identity(position, identity, topic)
        if not side.fenced:  # the same table (its Delta id) named another way
            position = publisher.start()
        try:
            check_topic(position, side.topic, config.table, topic)
        except TopicRecreatedError:
            publisher.keep_lost(position)  # for the next start, which finds the topic there
            raise
        publisher.progress.identity, publisher.progress.topic_id = identity, side.topic.id
        publisher.progress.hashed = tuple(config.hash_columns)
        resyncs.watch(topic, max(position.requested, position.generation.number))
        with steps.step("starting_point"):
            start, snapshot_at = starting_point(config, source, publisher, position)
        last = position.version
        metrics.event("start", table=config.table, topic=topic, last_published=last, next=start)
        schemas = TopicSchemas.connect(settings.schema_registry, topic, config.table)
        schemas.new_generation = position.resync_pending
        schemas.generation = publisher.progress.generation.number
        if not position.resync_pending:  # the generation's schema, named by its records
            schemas.carried_value = publisher.progress.value_schema = position.value_schema
        schemas.registered = publisher.progress.name_value_schema
        publisher.describe_key = lambda raw: describe_key(raw, schemas.key)
        resume = None if position.resync_pending else position.part
        changes = follow(
            source, schemas, config, start, snapshot_at, stop, steps, resume, cycle, started, probes
        )
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
    """Each chunk in its transactions (producer/publish/transactions.py), its further slices pulled
    from slices as it is sent; whole: the last version published whole before the first."""
    bar, total = ProgressBar(), 0
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
