"""The commit path: write a partition batch to ClickHouse, then commit its offsets.

One write is in flight at a time, on a worker thread, so Kafka keeps being read while
ClickHouse inserts; the next write starts only after the previous one is settled, which
keeps every partition's batches in order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from consumer.batch import INTENT, PartitionBatch, TopicPartitionKey
from consumer.dlq import DeadLetters
from consumer.errors import CommitRefusedError
from consumer.metrics import Metrics
from consumer.writer import BatchWriter, Written
from schemas.errors import CdfBridgeError, ServiceUnavailableError, TransientError
from schemas.kafka_errors import describe, passing

log = logging.getLogger(__name__)


class Committer:
    """Steps, in this order, for every batch:

    1. Record the batch's last offset in the group's commit metadata, at the offset
       already committed. A restart after a crash in steps 2–4 cuts the same batch again,
       so its insert_deduplication_token matches and ClickHouse drops the repeat.
    2. Insert the batch into ClickHouse as one block with that token (adding new optional
       columns first; dead-lettering messages that do not decode or fit), on the worker.
    3. Wait until Kafka has acknowledged the dead letters.
    4. Only now commit offset last+1: every message up to it is in ClickHouse or the DLQ.
       While batches queue up, it goes out with the next batch's step 1, one request for
       both; otherwise `flush` sends it.
    """

    def __init__(
        self, consumer: Any, writer: BatchWriter, dead_letters: DeadLetters, metrics: Metrics
    ) -> None:
        self.consumer = consumer
        self.writer = writer
        self.dead_letters = dead_letters
        self.metrics = metrics
        self.last_error: TransientError | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clickhouse")
        self._inflight: tuple[PartitionBatch, Future[Written], float] | None = None
        self._owed: dict[TopicPartitionKey, TopicPartition] = {}  # step 4s not yet sent

    @property
    def inflight(self) -> TopicPartitionKey | None:
        return self._inflight[0].key if self._inflight else None

    def start(self, batch: PartitionBatch) -> None:
        """Steps 1 and 2; call `settle` before starting the next batch."""
        assert self._inflight is None  # noqa: S101 - one write at a time keeps the order
        if batch.payloads:
            # The intent's offset is where the batch starts: it covers a step 4 owed for
            # the same partition.
            self._owed[batch.key] = TopicPartition(
                batch.topic,
                batch.partition,
                batch.first_offset,
                metadata=f"{INTENT}{batch.last_offset}",
            )
            self.flush()  # 1., with the step 4s owed
        future = self._worker.submit(self.writer.write, batch)  # 2.
        self._inflight = (batch, future, time.monotonic())

    def settle(self, wait: bool = True, commit: bool = True) -> PartitionBatch | None:
        """Step 3 for the write in flight, and its step 4 recorded as owed (sent by the
        next `start` or `flush`). Returns its batch when it failed transiently (offsets
        untouched; `last_error` says why); terminal errors raise."""
        if self._inflight is None:
            return None
        batch, future, started = self._inflight
        if not wait and not future.done():
            return None
        self._inflight = None
        try:
            written = future.result()
        except TransientError as exc:
            self.last_error = exc
            return batch
        if not commit:
            return None
        try:
            if written.dead_letters:
                self.dead_letters.flush()  # 3.
        except TransientError as exc:
            # Written but not committed: the retry's insert carries the same token, so
            # ClickHouse drops it; a moved partition's batch is dropped by the rebalance.
            self.last_error = exc
            return batch
        owed = TopicPartition(batch.topic, batch.partition, batch.last_offset + 1)
        self._owed[batch.key] = owed  # 4., sent with the next request
        self._observe(batch, written, time.monotonic() - started)
        return None

    def flush(self) -> None:
        """Send the owed commits (step 4, and step 1 from `start`) in one request. On a
        transient error they stay owed, and a later flush sends them."""
        if self._owed:
            self._commit(list(self._owed.values()))
            self._owed.clear()

    def forget(self, keys: set[TopicPartitionKey]) -> None:
        """Drop owed commits of partitions this member no longer owns."""
        for key in keys:
            self._owed.pop(key, None)

    def write_now(self, batch: PartitionBatch) -> None:
        """All four steps, waiting; raises the transient error instead of returning it."""
        self.start(batch)
        if self.settle() is not None:
            assert self.last_error is not None  # noqa: S101 - set with the failed batch
            raise self.last_error
        self.flush()

    def _commit(self, offsets: list[TopicPartition]) -> None:
        """One synchronous commit, every partition's result checked."""
        try:
            results = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:  # the request as a whole failed
            where = ", ".join(f"offset {tp.offset} of partition {tp.partition}" for tp in offsets)
            raise commit_error(offsets[0].topic, where, exc.args[0]) from exc
        failure = commit_failure([(tp.topic, tp.partition, tp.offset, tp.error) for tp in results])
        if failure is not None:
            raise failure

    def abandon(self) -> None:
        """Wait for the write in flight and drop it uncommitted (stopping on an error)."""
        if self._inflight is not None:
            self._inflight[1].exception()
            self._inflight = None

    def close(self) -> None:
        self._worker.shutdown(wait=True)

    def _observe(self, batch: PartitionBatch, written: Written, seconds: float) -> None:
        _, high = self.consumer.get_watermark_offsets(
            TopicPartition(batch.topic, batch.partition), cached=True
        )
        lag = max(0, high - batch.last_offset - 1) if high >= 0 else -1
        m = self.metrics
        m.rows.inc(written.rows)
        m.dead_letters.inc(written.dead_letters)
        m.batch_seconds.observe(seconds)
        m.rows_per_second.set(written.rows / seconds if seconds > 0 else 0)
        m.lag.labels(batch.topic, str(batch.partition)).set(lag)
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


CommitResult = tuple[str, int, int, KafkaError | None]  # topic, partition, offset, error


def commit_failure(results: Iterable[CommitResult]) -> CdfBridgeError | None:
    """The error of the first partition whose commit failed; None when all were committed."""
    for topic, partition, offset, error in results:
        if error is not None:
            return commit_error(topic, f"offset {offset} of partition {partition}", error)
    return None


def commit_error(topic: str, where: str, error: KafkaError) -> CdfBridgeError:
    """Transient when a later attempt can succeed (schemas/kafka_errors.py), else terminal."""
    if passing(error):
        return ServiceUnavailableError(f"committing {where} of {topic} failed: {describe(error)}")
    return CommitRefusedError(topic, where, describe(error))
