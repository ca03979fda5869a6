"""The consumer group's loop: poll, batch per partition, write to ClickHouse, then commit.

One `Pipeline` per process; `run()` installs SIGTERM and SIGINT handlers that drain the
buffered batches, commit them and return.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from consumer.batch import Batcher, Limits, PartitionBatch, TopicPartitionKey
from consumer.dlq import DeadLetters
from consumer.errors import RegistryUnavailableError
from consumer.kafka import consumer_config, ensure_topic
from consumer.metrics import Metrics
from consumer.registry import Schemas
from consumer.retry import Backoff
from consumer.settings import ConsumerSettings
from consumer.sink import Sink, connect
from consumer.table import Target
from consumer.writer import BatchWriter
from schemas.errors import TransientError
from schemas.naming import dlq_topic

log = logging.getLogger(__name__)
INTENT = "cdfbridge:batch-end="  # commit metadata: the last offset of the batch in flight
FETCH = 10_000  # messages per consume() call


class Pipeline:
    def __init__(
        self, settings: ConsumerSettings, *, until_caught_up: bool = False, group: str = ""
    ) -> None:
        self.settings = settings
        self.topic = settings.consumer.topic
        self.group = group or settings.consumer.group
        self.until_caught_up = until_caught_up
        self.metrics = Metrics()
        self.backoff = Backoff(settings.consumer.max_backoff_seconds)
        c = settings.consumer
        self.batcher = Batcher(Limits(c.batch_rows, c.batch_bytes, c.batch_seconds))
        self.target = Target(settings.clickhouse.database, c.target_table)
        self.assigned: set[TopicPartitionKey] = set()
        self.ever_assigned: set[TopicPartitionKey] = set()
        self._pending: list[PartitionBatch] = []
        self._eof: set[TopicPartitionKey] = set()
        self._all_partitions: set[TopicPartitionKey] = set()
        self._paused_until: float | None = None
        self._stop = threading.Event()
        self.schemas = Schemas(settings.schema_registry.client_config())
        self.dead_letters = DeadLetters(settings.kafka.client_config())
        self.writer: BatchWriter | None = None
        self.consumer: Any = None

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Consume until stopped (or caught up), then drain and commit what is buffered."""
        self.writer = self._retrying(self._make_writer)
        if self.writer is None:
            return
        ensure_topic(self.settings.kafka.client_config(), dlq_topic(self.topic))
        config = consumer_config(self.settings.kafka.client_config(), self.group)
        self.consumer = Consumer({**config, "enable.partition.eof": self.until_caught_up})
        self.consumer.subscribe(
            [self.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        try:
            while not self._stop.is_set() and not self._caught_up():
                self._step()
            self._drain()
        except BaseException:
            # Stopping on an error: buffered batches stay uncommitted, and close() must
            # not try to write them on revoke.
            self._forget(set(self.assigned) | {b.key for b in self._pending})
            self._pending.clear()
            self.batcher.drop([key for key, _ in self.batcher.open_keys()])
            raise
        finally:
            self.consumer.close()

    def _step(self) -> None:
        if self._paused_until is not None and time.monotonic() < self._paused_until:
            self.consumer.consume(1, timeout=0.2)  # partitions paused: serves rebalances only
            self.metrics.polled()
            return
        messages = self.consumer.consume(FETCH, timeout=0.5)
        self.metrics.polled()
        for message in messages:
            error = message.error()
            if error is None:
                self._eof.discard((message.topic(), message.partition()))
                self._pending += self.batcher.add(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                self._eof.add((message.topic(), message.partition()))
            elif error.fatal():
                raise KafkaException(error)
            else:
                log.warning("kafka error", extra={"error": str(error)})
        self._pending += self.batcher.due()
        self._flush_pending()
        self.metrics.buffered.set(self.batcher.buffered_rows())

    def _flush_pending(self) -> None:
        while self._pending:
            try:
                self._commit(self._pending[0])
            except TransientError as exc:
                self._pause(exc)
                return
            self._pending.pop(0)
        if self._paused_until is not None:
            self.consumer.resume(self.consumer.assignment())
            self._paused_until = None
            self.backoff.reset()

    def _commit(self, batch: PartitionBatch) -> None:
        """Write one partition batch, then commit its offsets. This order protects data:

        1. Record the batch's last offset in the group's commit metadata, at the offset
           already committed. A restart after a crash in steps 2–4 cuts the same batch again,
           so its insert_deduplication_token matches and ClickHouse drops the repeat.
        2. Insert the batch into ClickHouse as one block with that token (adding new
           optional columns first; dead-lettering messages that do not decode or fit).
        3. Wait until Kafka has acknowledged the dead letters.
        4. Only now commit offset last+1: every message up to it is in ClickHouse or the DLQ.
        """
        assert self.writer is not None  # noqa: S101 - set before the loop starts
        started = time.monotonic()
        if batch.messages:
            intent = f"{INTENT}{batch.last_offset}"
            tp = TopicPartition(batch.topic, batch.partition, batch.first_offset, metadata=intent)
            self.consumer.commit(offsets=[tp], asynchronous=False)  # 1.
        written = self.writer.write(batch)  # 2.
        if written.dead_letters:
            self.dead_letters.flush()  # 3.
        done = TopicPartition(batch.topic, batch.partition, batch.last_offset + 1)
        self.consumer.commit(offsets=[done], asynchronous=False)  # 4.
        self._observe(batch, written.rows, written.dead_letters, time.monotonic() - started)

    def _observe(self, batch: PartitionBatch, rows: int, dead: int, seconds: float) -> None:
        _, high = self.consumer.get_watermark_offsets(
            TopicPartition(batch.topic, batch.partition), cached=True
        )
        lag = max(0, high - batch.last_offset - 1) if high >= 0 else -1
        m = self.metrics
        m.rows.inc(rows)
        m.dead_letters.inc(dead)
        m.batch_seconds.observe(seconds)
        m.rows_per_second.set(rows / seconds if seconds > 0 else 0)
        m.lag.labels(batch.topic, str(batch.partition)).set(lag)
        log.info(
            "batch committed",
            extra={
                "partition": batch.partition,
                "rows": rows,
                "dead_letters": dead,
                "first_offset": batch.first_offset,
                "last_offset": batch.last_offset,
                "insert_ms": round(seconds * 1000, 1),
                "lag": lag,
            },
        )

    def _pause(self, exc: Exception) -> None:
        delay = self.backoff.next()
        self.metrics.retries.inc()
        log.warning(
            "transient error, retrying", extra={"error": str(exc)[:500], "retry_in_s": delay}
        )
        self.consumer.pause(self.consumer.assignment())
        self._paused_until = time.monotonic() + delay

    def _drain(self) -> None:
        """Write and commit every buffered batch; transient errors are retried for a while."""
        self._pending += self.batcher.close()
        deadline = time.monotonic() + 2 * self.settings.consumer.max_backoff_seconds
        while self._pending and time.monotonic() < deadline:
            self._paused_until = None
            self._flush_pending()
            if self._pending:
                time.sleep(max(0.0, (self._paused_until or 0) - time.monotonic()))
        if self._pending:
            log.warning("stopping with uncommitted batches; they will be consumed again")

    def _caught_up(self) -> bool:
        if not self.until_caught_up or not self.assigned:
            return False
        return self.assigned <= self._eof and not self._pending and self._partitions() <= self._eof

    def _partitions(self) -> set[TopicPartitionKey]:
        if not self._all_partitions:
            topics = self.consumer.list_topics(self.topic, timeout=10).topics
            self._all_partitions = {(self.topic, p) for p in topics[self.topic].partitions}
        return self._all_partitions

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        for tp in consumer.committed(partitions, timeout=30):
            meta = tp.metadata or ""
            if meta.startswith(INTENT) and tp.offset >= 0:
                self.batcher.cut_at((tp.topic, tp.partition), int(meta.removeprefix(INTENT)))
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self.assigned |= keys
        self.ever_assigned |= keys
        log.info("assigned", extra={"partitions": sorted(p for _, p in keys)})

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        """Flush and commit the revoked partitions; on a transient error leave them
        uncommitted for the next owner to read again."""
        keys = {(tp.topic, tp.partition) for tp in partitions}
        mine = [b for b in self._pending if b.key in keys]
        self._pending = [b for b in self._pending if b.key not in keys]
        failed: set[TopicPartitionKey] = set()
        for batch in mine + self.batcher.close(list(keys)):
            if batch.key in failed:
                continue  # a later batch must not commit past an unwritten one
            try:
                self._commit(batch)
            except TransientError as exc:
                failed.add(batch.key)
                log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})
        self._forget(keys)
        log.info("revoked", extra={"partitions": sorted(p for _, p in keys)})

    def _on_lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._pending = [b for b in self._pending if b.key not in keys]
        dropped = self.batcher.drop(list(keys))
        self._forget(keys)
        log.warning("partitions lost, buffers dropped", extra={"rows": dropped})

    def _forget(self, keys: set[TopicPartitionKey]) -> None:
        self.batcher.drop(list(keys))
        self.assigned -= keys
        self._eof -= keys

    def _make_writer(self) -> BatchWriter:
        client = connect(self.settings.clickhouse, compress=False)
        sink = Sink(client, self.target, self.settings.registry_url_for_clickhouse())
        order_by = self.schemas.order_by(self.topic, self.settings.consumer.primary_key)
        writer = BatchWriter(
            sink,
            self.schemas,
            self.dead_letters,
            order_by,
            self.settings.consumer.deduplication_window,
        )
        writer.prepare(self.schemas.latest_value(self.topic)[1])
        return writer

    def _retrying(self, make: Any) -> Any:
        """Call `make` until services answer, backing off; None when stopped meanwhile."""
        while not self._stop.is_set():
            try:
                return make()
            except (TransientError, RegistryUnavailableError) as exc:
                delay = self.backoff.next()
                log.warning(
                    "waiting for services", extra={"error": str(exc)[:300], "retry_in_s": delay}
                )
                self._stop.wait(delay)
        return None


def run(settings: ConsumerSettings, *, until_caught_up: bool = False) -> Pipeline:
    """The consumer process: serve metrics, consume, and drain on SIGTERM or SIGINT."""
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
