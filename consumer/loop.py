"""The consumer group's loop: poll, batch per partition, write to ClickHouse, then commit
(the ordered steps are in consumer/commit.py).

One `Pipeline` per process; `run()` installs SIGTERM and SIGINT handlers that drain the
buffered batches, commit them and return.
"""

from __future__ import annotations

import gc
import logging
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)

from consumer.batch import INTENT, Batcher, Limits, PartitionBatch, TopicPartitionKey
from consumer.errors import KafkaFatalError
from consumer.kafka import DEAD_LETTER_HEADROOM, consumer_config, ensure_topic
from consumer.metrics import Metrics
from consumer.retry import Backoff, retrying
from consumer.settings import ConsumerSettings
from consumer.table import Target
from schemas.errors import TransientError
from schemas.kafka_errors import build, describe
from schemas.naming import dlq_topic

if TYPE_CHECKING:
    from consumer.commit import Committer
    from consumer.dlq import DeadLetters
    from consumer.writer import BatchWriter

log = logging.getLogger(__name__)
FETCH = 10_000  # messages per consume() call
# consume() waits this long for FETCH messages, so a trickle is still batched promptly;
# shorter while a write is under way, so that the next one starts soon after it.
POLL_S = 0.1
BUSY_POLL_S = 0.005
# Closed batches that may wait for ClickHouse while Kafka is read on; past this the loop
# waits for the writes instead, which bounds memory.
QUEUED = 4


class Pipeline:
    def __init__(
        self, settings: ConsumerSettings, *, until_caught_up: bool = False, group: str = ""
    ) -> None:
        c = settings.consumer
        self.settings = settings
        self.topic = c.topic
        self.group = group or c.group
        self.until_caught_up = until_caught_up
        self.metrics = Metrics()
        self.backoff = Backoff(c.max_backoff_seconds)
        self.batcher = Batcher(Limits(c.batch_rows, c.batch_bytes, c.batch_seconds))
        self.target = Target(settings.clickhouse.database, c.target_table)
        self.assigned: set[TopicPartitionKey] = set()
        self.ever_assigned: set[TopicPartitionKey] = set()
        self._pending: list[PartitionBatch] = []
        self._eof: set[TopicPartitionKey] = set()
        self._all_partitions: set[TopicPartitionKey] = set()
        self._paused_until: float | None = None
        self._stop = threading.Event()
        self.committer: Committer | None = None
        self._first_message: float | None = None

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Consume until stopped (or caught up), then drain and commit what is buffered."""
        kafka = self.settings.kafka.client_config()
        connected = self._connect(kafka)
        if connected is None:
            return
        consumer, self.committer = connected
        started = time.monotonic()
        try:
            while not self._stop.is_set() and not self._caught_up():
                self._step(consumer)
            self._drain()
            self._summary(started)
        except BaseException:
            self._abandon()
            raise
        finally:
            consumer.close()
            self.committer.close()

    def _connect(self, kafka: dict[str, Any]) -> tuple[Any, Committer] | None:
        """A subscribed consumer and the committer that writes for it; None if stopped.

        The group is joined first: librdkafka's threads do the join while this thread loads
        the registry and ClickHouse clients, creates or checks the table and the dead-letter
        topic, so start-up costs the longer of the two, not their sum. If those services
        make it wait, it leaves the group meanwhile: no partition sits with a member that
        cannot write it.
        """
        from consumer.commit import Committer
        from consumer.dlq import DeadLetters

        consumer = self._subscribe(kafka)
        dead_letters = DeadLetters(kafka, self._largest + DEAD_LETTER_HEADROOM)
        try:
            writer = self._writer(kafka, dead_letters)
        except TransientError as exc:
            consumer.close()
            log.warning("waiting for services", extra={"error": str(exc)[:300]})
            found = retrying(lambda: self._writer(kafka, dead_letters), self.backoff, self._stop)
            if found is None:
                return None
            writer, consumer = found, self._subscribe(kafka)
        except BaseException:
            consumer.close()
            raise
        return consumer, Committer(consumer, writer, dead_letters, self.metrics)

    @property
    def _largest(self) -> int:
        return self.settings.kafka.max_message_bytes

    def _subscribe(self, kafka: dict[str, Any]) -> Any:
        consumer = build(Consumer, consumer_config(kafka, self.group, self._largest))
        if self.until_caught_up:
            partitions = consumer.list_topics(self.topic, timeout=30).topics[self.topic].partitions
            self._all_partitions = {(self.topic, p) for p in partitions}
        consumer.subscribe(
            [self.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        return consumer

    def _writer(self, kafka: dict[str, Any], dead_letters: DeadLetters) -> BatchWriter:
        """The table created or checked, and the dead-letter topic too."""
        from consumer.registry import Schemas
        from consumer.writer import BatchWriter

        schemas = Schemas(self.settings.schema_registry.client_config())
        writer = BatchWriter.create(self.settings, self.target, schemas, dead_letters)
        ensure_topic(kafka, dlq_topic(self.topic), 1, self._largest + DEAD_LETTER_HEADROOM)
        return writer

    def _step(self, consumer: Any) -> None:
        assert self.committer is not None  # noqa: S101 - set by run()
        paused = self._paused_until is not None and time.monotonic() < self._paused_until
        if not paused and self._requeue(self.committer.settle(wait=False)):
            paused = True
        # While paused, consume() still serves rebalances and may return a few messages
        # fetched before the pause: they are buffered like any other.
        busy = bool(self._pending) or self.committer.inflight is not None
        messages = consumer.consume(FETCH, timeout=BUSY_POLL_S if busy else POLL_S)
        self.metrics.polled()
        if messages and self._first_message is None:
            self._first_message = time.monotonic()
        events = []
        if any(map(Message.error, messages)):
            events = [m for m in messages if m.error() is not None]
            messages = [m for m in messages if m.error() is None]
        self._pending += self.batcher.extend(messages)
        self._eof -= self.batcher.last_seen
        for event in events:
            self._event(event)
        self._pending += self.batcher.due()
        if not paused:
            self._flush_pending(QUEUED)
        self.metrics.buffered.set(self.batcher.buffered_rows())

    def _event(self, event: Any) -> None:
        error = event.error()
        if error.code() == KafkaError._PARTITION_EOF:
            key = (event.topic(), event.partition())
            self._eof.add(key)
            self._pending += self.batcher.ended(key)
        elif error.fatal():
            raise KafkaFatalError(describe(error))
        else:
            log.warning("kafka error", extra={"error": str(error)})

    def _flush_pending(self, queued: int = 0) -> None:
        """Start the pending batches' writes in order, each after the previous settled.
        Waits for the write in flight only while more than `queued` batches are pending;
        with nothing left to write, sends the commits owed."""
        assert self.committer is not None  # noqa: S101 - set by run()
        while self._pending:
            if self._requeue(self.committer.settle(wait=len(self._pending) > queued)):
                return
            if self.committer.inflight is not None:
                return  # still writing: Kafka is read on meanwhile
            batch = self._pending.pop(0)
            try:
                self.committer.start(batch)
            except TransientError as exc:
                self.committer.last_error = exc
                self._requeue(batch)
                return
        if self.committer.inflight is None:
            try:
                self.committer.flush()
            except TransientError as exc:
                self.committer.last_error = exc
                self._pause()
                return
        if self._paused_until is not None:
            self.committer.consumer.resume(self.committer.consumer.assignment())
            self._paused_until = None
            self.backoff.reset()

    def _requeue(self, failed: PartitionBatch | None) -> bool:
        """Put a batch whose write failed transiently back first, and pause all partitions."""
        if failed is None or self.committer is None:
            return False
        self._pending.insert(0, failed)
        self._pause()
        return True

    def _pause(self) -> None:
        """Pause all partitions for the next back-off delay after a transient error."""
        assert self.committer is not None  # noqa: S101 - set by run()
        delay = self.backoff.next()
        self.metrics.retries.inc()
        error = str(self.committer.last_error)[:500]
        log.warning("transient error, retrying", extra={"error": error, "retry_in_s": delay})
        consumer = self.committer.consumer
        consumer.pause(consumer.assignment())
        self._paused_until = time.monotonic() + delay

    def _drain(self) -> None:
        """Write and commit every buffered batch; transient errors are retried for a while."""
        assert self.committer is not None  # noqa: S101 - set by run()
        self._pending += self.batcher.close()
        deadline = time.monotonic() + 2 * self.settings.consumer.max_backoff_seconds
        while (self._pending or self.committer.inflight) and time.monotonic() < deadline:
            self._paused_until = None
            self._flush_pending()
            self._requeue(self.committer.settle())
            if self._pending:
                time.sleep(max(0.0, (self._paused_until or 0) - time.monotonic()))
        uncommitted = bool(self._pending)
        try:
            self.committer.flush()
        except TransientError:
            uncommitted = True
        if uncommitted:
            log.warning("stopping with uncommitted batches; they will be consumed again")

    def _summary(self, started: float) -> None:
        now = time.monotonic()
        reading = now - self._first_message if self._first_message is not None else 0.0
        log.info(
            "caught up" if self._caught_up() else "stopped",
            extra={
                "rows": int(self.metrics.rows._value.get()),
                "dead_letters": int(self.metrics.dead_letters._value.get()),
                "seconds": round(now - started, 3),
                "seconds_from_first_message": round(reading, 3),
            },
        )

    def _abandon(self) -> None:
        """Stopping on an error: buffered batches stay uncommitted, and close() must not try
        to write them on revoke."""
        if self.committer is not None:
            self.committer.abandon()
        self._forget(set(self.assigned) | {b.key for b in self._pending})
        self._pending.clear()
        self.batcher.drop([key for key, _ in self.batcher.open_keys()])

    def _caught_up(self) -> bool:
        if not self.until_caught_up or not self.assigned or self._pending:
            return False
        return self.assigned <= self._eof and self._all_partitions <= self._eof

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        """Start each partition at its committed offset, else at the earliest.

        Assigning the offsets just read spares librdkafka a second look-up of them (and its
        100 ms wait before resetting a partition without one)."""
        if self.committer is None:  # closed by _connect before any read: nothing to start
            return
        committed = consumer.committed(partitions, timeout=30)
        for tp in committed:
            meta = tp.metadata or ""
            if meta.startswith(INTENT) and tp.offset >= 0:
                self.batcher.cut_at((tp.topic, tp.partition), int(meta.removeprefix(INTENT)))
        consumer.incremental_assign(
            [
                TopicPartition(
                    tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                )
                for tp in committed
            ]
        )
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self.assigned |= keys
        self.ever_assigned |= keys
        log.info("assigned", extra={"partitions": sorted(p for _, p in keys)})

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        """Flush and commit the revoked partitions; on a transient error leave them
        uncommitted for the next owner to read again."""
        keys = {(tp.topic, tp.partition) for tp in partitions}
        if self.committer is None:  # left the group before anything was read
            self._forget(keys)
            return
        failed = self.committer.settle()
        if failed is not None:
            self._pending.insert(0, failed)
        mine = [b for b in self._pending if b.key in keys]
        self._pending = [b for b in self._pending if b.key not in keys]
        broken: set[TopicPartitionKey] = set()
        for batch in mine + self.batcher.close(list(keys)):
            if batch.key in broken:
                continue  # a later batch must not commit past an unwritten one
            try:
                self.committer.write_now(batch)
            except TransientError as exc:
                broken.add(batch.key)
                log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})
        try:
            self.committer.flush()
        except TransientError as exc:
            log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})
        self._forget(keys)
        log.info("revoked", extra={"partitions": sorted(p for _, p in keys)})

    def _on_lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = {(tp.topic, tp.partition) for tp in partitions}
        if self.committer is not None and self.committer.inflight in keys:
            self.committer.settle(commit=False)
        self._pending = [b for b in self._pending if b.key not in keys]
        dropped = self.batcher.drop(list(keys))
        self._forget(keys)
        log.warning("partitions lost, buffers dropped", extra={"rows": dropped})

    def _forget(self, keys: set[TopicPartitionKey]) -> None:
        if self.committer is not None:
            self.committer.forget(keys)
        self.batcher.drop(list(keys))
        self.assigned -= keys
        self._eof -= keys


def run(settings: ConsumerSettings, *, until_caught_up: bool = False) -> Pipeline:
    """The consumer process: serve metrics, consume, and drain on SIGTERM or SIGINT."""
    # consume() allocates an object per message: collecting the young generation every
    # 700 allocations (the default) took a fifth of the loop's time; objects are freed by
    # reference counting anyway, the collector only finds cycles.
    gc.set_threshold(100_000, 10, 10)
    pipeline = Pipeline(settings, until_caught_up=until_caught_up)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: pipeline.stop())
    server = None
    if settings.consumer.metrics_port:
        server = pipeline.metrics.serve(settings.consumer.metrics_port)
    try:
        pipeline.run()
    finally:
        if server is not None:
            server.shutdown()
    return pipeline
