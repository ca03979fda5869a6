"""Every table through one Spark session: each table followed in a thread of its own by
`follow_table` (producer/lake/table.py), fairly, and failing alone. A table given on its own (no
[[tables]]) is a lake of one, run by the same code; only its failure stops the process, with
the exit code it calls for, and its Kafka side is set up while Spark starts (`Begun`).

- Reads at the tables' heads are collected in one Spark job per cycle (producer/read/cycle.py).
- Every table's Kafka side (its topics, progress and claim) is set up with the others'
  while Spark starts (producer/lake/startup.py kafka_sides_in_thread), in the tables'
  order, the order in which they take their turns to start.
- As many tables start at once as half the driver's heap holds a chunk each, in the
  tables' order (pacing.py starting_at_once): from their Delta logs' load until their
  first read is done or waits in the cycle for its job (the first Spark jobs of a table,
  which sample its rows' width and read its first chunk, are its slowest), or until they
  find nothing to read. The first ones reach their heads and publish while the others wait
  their turn, instead of all loading and reading together, each slowed by all the others.
  A read waiting in the cycle adds no job of its own: it joins the cycle's.
- One SparkSession in Spark's FAIR scheduler: reads far behind a table's head (backfills,
  snapshots) run in one pool and fresh commits in another (producer/read/chunks.py), so a big
  backfill's tasks take turns with the small tables' fresh commits instead of queueing
  ahead of them.
- Each table keeps its own topic and progress record; one Kafka transaction of the process's
  (producer/publish/transactor.py) holds the chunks handed meanwhile, each with its progress
  record, so exactly once holds per table as with one table per process.
- A table that fails on its own (a schema change, vacuumed versions, a NULL key, a path
  with no table ...) is logged (`table_failed`), shown on /metrics
  (`cdfbridge_producer_table_failed`) and retried from its last whole chunk with back-off
  (0.5 s doubling up to TABLE_MAX_BACKOFF_S), while the others go on. An attempt that ran
  for HEALTHY_S before it failed starts the back-off over.
- A resync of one table (producer/resync/resync.py) halts that table's follow alone, even while
  it waits to be retried.
- What stops every table stops the process: another producer took a table's topic over
  (exit 4), Kafka, the registry, the object store or the Spark driver is gone (3), or one
  of them refuses the shared settings, such as credentials (2). The first such error is
  raised once every table's thread has ended.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from producer import metrics
from producer.errors import fails_every_table
from producer.follow.probes import Probes
from producer.lake.pacing import TABLE_MAX_BACKOFF_S, Backoff, Starts, starting_at_once
from producer.lake.startup import Begun, discard
from producer.lake.table import follow_table
from producer.publish.publish import Transactions
from producer.read.cycle import Cycle
from producer.resync.resync import Resyncs
from producer.settings import ProducerSettings, SourceSection
from producer.spark_errors import lost_driver
from schemas.errors import CdfBridgeError
from services.jvm_names import driver_heap_bytes
from services.retry import Stopped, retrying

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("cdfbridge.producer")


def follow_all(
    settings: ProducerSettings,
    spark: SparkSession,
    resyncs: Resyncs,
    cycle: Cycle,
    transactions: Transactions,
    begun: Mapping[str, Begun] | None = None,
    probes: Probes | None = None,
) -> None:
    """Follow every table of settings until each is done (--until-version) or the process
    stops (resyncs.stop); raises the first error that stops every table. cycle: where the
    tables' reads at their heads are collected together; transactions: the Kafka
    transactions their chunks share; begun: the tables' starts, by topic, begun before Spark's;
    probes: where the idle tables' looks for new commits are grouped."""
    chunk_bytes = max(source.max_bytes_per_chunk for source in settings.sources())
    at_once = starting_at_once(driver_heap_bytes(spark), chunk_bytes)
    starts = Starts(at_once)
    isolate = bool(settings.tables)
    shared = _Shared(spark, resyncs, cycle, starts, transactions, isolate, probes)
    begun = begun or {}
    tables = [
        _Table(settings, source, shared, begun.get(source.topic_name))
        for source in settings.sources()
    ]
    topics = [t.topic for t in tables]
    metrics.event("tables", count=len(tables), starting_at_once=at_once, topics=topics)
    for table in tables:
        table.thread.start()
    for table in tables:
        table.thread.join()
    stopping = next((t.error for t in tables if t.error is not None), None)
    if stopping is not None:
        raise stopping


def stops_every_table(exc: BaseException, spark: SparkSession) -> bool:
    """Fenced, a shared service that does not answer or refuses the shared settings (bad
    credentials, say), or the Spark driver gone."""
    return fails_every_table(exc) or lost_driver(exc, spark, None) is not None


def named(exc: BaseException, spark: SparkSession) -> BaseException:
    """exc, or the Spark driver's loss it stands for where no step of ours named it (a
    table's start, say): exit code 3, not an unexpected error's."""
    if isinstance(exc, CdfBridgeError):
        return exc
    lost = lost_driver(exc, spark, None)
    if lost is None:
        return exc
    lost.__cause__ = exc
    return lost


@dataclass(frozen=True)
class _Shared:
    """What the tables of a process share. isolate: a table's own failure is retried while
    the others go on ([[tables]]); else it stops the process."""

    spark: SparkSession
    resyncs: Resyncs
    cycle: Cycle
    starts: Starts
    transactions: Transactions
    isolate: bool
    probes: Probes | None

    def follow(
        self, settings: ProducerSettings, started: Callable[[], None], begun: Begun | None
    ) -> None:
        spark, resyncs, cycle = self.spark, self.resyncs, self.cycle
        steps, kafka = (begun.steps, begun.kafka) if begun is not None else (None, None)
        transactions, probes = self.transactions, self.probes
        follow_table(settings, spark, resyncs, cycle, steps, kafka, started, transactions, probes)


class _Table:
    """One table's thread: follow it, retrying what fails it alone."""

    def __init__(
        self,
        settings: ProducerSettings,
        source: SourceSection,
        shared: _Shared,
        begun: Begun | None,
    ) -> None:
        self.settings = settings.model_copy(update={"source": source, "tables": []})
        self.source, self.spark, self.resyncs = source, shared.spark, shared.resyncs
        self.shared, self.starts = shared, shared.starts
        self.stop = shared.resyncs.stop
        self.topic = source.topic_name
        self.error: BaseException | None = None  # what stopped every table, if this saw it
        self.backoff = Backoff()
        self.begun = begun  # taken by the first attempt
        self.ticket: int | None = shared.starts.ticket()  # the first attempt's turn, in order
        self.thread = threading.Thread(target=self._run, name=f"table-{self.topic}", daemon=True)

    def _run(self) -> None:
        retry = retrying(
            f"table {self.source.table}",
            max_backoff_s=TABLE_MAX_BACKOFF_S,
            stop=self.resyncs.halt(self.topic),  # the process stops, or a resync is asked for
            retry_on=self._fails_alone,
            delay_s=self.backoff.delay_s,
        )
        metrics.TABLE_FAILED.labels(self.topic).set(0)

        def attempt() -> None:
            ticket, self.ticket = self.ticket, None  # a retry waits behind every other
            with self.starts.turn(self.stop, ticket) as started:
                self.backoff.attempt()
                begun, self.begun = self.begun, None
                if started is not None:  # else the process stops
                    self.shared.follow(self.settings, started, begun)
                elif begun is not None:
                    discard(begun.kafka)

        try:
            while True:
                try:
                    retry(attempt)
                    return
                except Stopped:
                    if self.stop.is_set():
                        return
                    # a resync asked for while the table waited to retry: take it now
        except BaseException as exc:  # noqa: BLE001 - handed to follow_all to raise
            if self._stops_process(exc):
                self.error = named(exc, self.spark)
                self.stop.set()  # every other table stops too
            # else the process is stopping while this table failed: it was logged

    def _stops_process(self, exc: BaseException) -> bool:
        """exc stops every table, or this one is the process's only table."""
        return not self.shared.isolate or stops_every_table(exc, self.spark)

    def _fails_alone(self, exc: BaseException) -> bool:
        """True (retry this table) unless exc stops every table or the process is stopping;
        a table's own failure is logged and counted here."""
        if self.stop.is_set() or self._stops_process(exc):
            return False
        self.backoff.failed()
        metrics.TABLE_FAILED.labels(self.topic).set(1)
        metrics.TABLE_FAILURES.labels(self.topic).inc()
        metrics.event(
            "table_failed",
            logging.WARNING,
            table=self.source.table,
            topic=self.topic,
            error=f"{type(exc).__name__}: {exc}"[:1000],
        )
        if not isinstance(exc, CdfBridgeError):  # ours say what to do; others need the trace
            log.error("unexpected failure of table %s", self.source.table, exc_info=exc)
        return True
