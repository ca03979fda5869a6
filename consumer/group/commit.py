"""The commit path: each closed batch is written to ClickHouse, then its offsets are
committed, in the numbered steps of `CommitQueue`. It holds a batch from its cut until its
commit (pending, in flight, then owed in consumer/group/positions.py), for
consumer/group/uncommitted.py, which owns it.

A topic has one write in flight at a time, on a thread of the process's write pool
(consumer/process.py, `write_threads`), so Kafka keeps being read while ClickHouse inserts;
the next write starts only after the previous one is settled, which keeps every partition's
batches in order. The pool bounds the inserts running at once for every topic together.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass

from confluent_kafka import TopicPartition

from consumer.group.batch import INTENT, PartitionBatch, TopicPartitionKey, Written
from consumer.group.positions import Commit, Positions
from schemas.errors import TransientError
from services.retry import backoff_s

log = logging.getLogger(__name__)
# Closed batches that may wait for ClickHouse while Kafka is read on; past this the loop
# waits for the writes instead (or, on a member other topics share, pauses this topic's
# partitions: consumer/group/backpressure.py), which bounds memory.
QUEUED = 4

Write = Callable[[PartitionBatch], Written]  # step 2: BatchWriter.write
OnWritten = Callable[[PartitionBatch, Written, float], None]  # batch, what it stored, seconds


@dataclass(frozen=True)
class InFlight:
    batch: PartitionBatch
    future: Future[Written]
    started: float


class CommitQueue:
    """Steps, in this order, for every batch:

    1. Record the batch's last offset in the group's commit metadata, at the offset already
       committed (`_start`). If steps 2–3 do not complete, whoever reads the partition next
       from there (a restart, the next owner, a rewind) cuts the same batch again, so its
       insert_deduplication_token matches and ClickHouse drops the repeat.
    2. Insert the batch into ClickHouse as one block with that token, on the worker
       (`write` adds new optional columns first, and dead-letters messages that do not decode
       or fit, returning once Kafka has acknowledged them).
    3. Only now commit offset last+1 (`settle`): every message up to it is in ClickHouse or
       the DLQ. While batches queue up, it goes out with the next batch's step 1, one request
       for both; otherwise `flush` sends it.

    A TransientError of any step is raised to the caller, with the offsets where they were.
    """

    def __init__(
        self, write: Write, commit: Commit, on_written: OnWritten, pool: Executor | None = None
    ) -> None:
        """pool: the process's write pool; without one, the queue makes a thread of its own."""
        self.write, self.on_written = write, on_written
        self.pending: deque[PartitionBatch] = deque()
        self.inflight: InFlight | None = None
        self.positions = Positions(commit)
        self._own = pool is None
        self._worker = pool or ThreadPoolExecutor(max_workers=1, thread_name_prefix="clickhouse")
        self._last: Future[Written] | None = None  # the last write handed to the pool

    @property
    def busy(self) -> bool:
        return bool(self.pending) or self.inflight is not None

    def submit(self, batches: list[PartitionBatch]) -> None:
        self.pending += batches

    def _start(self, batch: PartitionBatch) -> None:
        """Steps 1 and 2; `settle` comes before the next batch's."""
        assert self.inflight is None  # noqa: S101 - one write at a time keeps the order
        # 1. At the batch's first offset: it stands in for a step 3 owed for the partition.
        end = f"{INTENT}{batch.last_offset}"
        self.positions.owe(
            TopicPartition(batch.topic, batch.partition, batch.first_offset, metadata=end)
        )
        self.flush()
        # 2. On the worker, while Kafka is read on.
        future = self._last = self._worker.submit(self.write, batch)
        self.inflight = InFlight(batch, future, time.monotonic())

    def settle(self, timeout_s: float | None = None) -> bool:
        """The end of step 2 for the write in flight, and its step 3 owed (sent by the next
        `_start` or `flush`). False while it is still running after `timeout_s`; raises what
        the write raised (then nothing is owed for it)."""
        if self.inflight is None:
            return True
        batch, future, started = self.inflight.batch, self.inflight.future, self.inflight.started
        if not future.done() and not futures.wait([future], timeout_s).done:
            return False
        self.inflight = None
        written = future.result()
        # 3. Owed: it goes out with the next batch's step 1, or with `flush`.
        self.positions.owe(TopicPartition(batch.topic, batch.partition, batch.last_offset + 1))
        self.on_written(batch, written, time.monotonic() - started)
        return True

    def flush(self) -> None:
        """Send the owed commits (step 3, and step 1 from `_start`) in one request."""
        self.positions.flush()

    @property
    def full(self) -> bool:
        return len(self.pending) > QUEUED

    def advance(self, wait: bool = True) -> int:
        """Settle the write in flight if it is done, and start the next pending batch; with
        nothing left to write, send the commits owed. Waits for the write in flight only
        while `full` (and `wait`). Returns how many batches were written."""
        written = 0
        while True:
            if self.inflight is not None:
                if not self.settle(None if wait and self.full else 0):
                    return written
                written += 1
            if not self.pending:
                self.flush()
                return written
            self._start(self.pending.popleft())

    def write_now(self, batch: PartitionBatch) -> None:
        """Steps 1 and 2 for one batch, waiting; its step 3 is owed (`flush`)."""
        self._start(batch)
        self.settle()

    def write_through(self, batches: list[PartitionBatch]) -> None:
        """Steps 1–3 for each batch, waiting (those of partitions being revoked); after a
        transient error, the partition's later batches are skipped: no commit passes an
        unwritten batch, and its next owner reads them again."""
        broken: set[TopicPartitionKey] = set()
        for batch in batches:
            if batch.key in broken:
                continue
            try:
                self.write_now(batch)
            except TransientError as exc:
                broken.add(batch.key)
                log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})
        try:
            self.flush()
        except TransientError as exc:
            log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})

    def drain(self, deadline: float, max_backoff_s: float) -> bool:
        """Write every batch and commit, waiting, until `deadline`; a transient error is
        retried after services.retry's back-off, a failed batch as it is (same offsets, same
        token). False when the deadline came first."""
        failures = 0
        while (left := deadline - time.monotonic()) > 0:
            failed = self.inflight  # back first if its write fails
            try:
                if not self.settle(left):
                    return False  # still inserting at the deadline
                failed = None
                if not self.pending:
                    self.flush()
                    return True
                self._start(self.pending[0])  # stays pending until it is in flight
                self.pending.popleft()
            except TransientError as exc:
                self.pending.extendleft([failed.batch] if failed else [])
                failures += 1
                delay = min(backoff_s(failures, max_backoff_s), deadline - time.monotonic())
                log.warning(
                    "transient error, retrying",
                    extra={"error": str(exc)[:500], "retry_in_s": delay},
                )
                time.sleep(max(0.0, delay))
        return False

    def drop(self, keys: set[TopicPartitionKey] | None = None, wait: bool = True) -> None:
        """Forget the pending batches and owed commits of `keys` (all when None); a write in
        flight for one of them is left uncommitted, once it has ended when `wait`."""
        inflight = self.inflight
        if inflight is not None and (keys is None or inflight.batch.key in keys):
            if wait:
                inflight.future.exception()  # its outcome, whatever it is, is dropped
            self.inflight = None
        self.positions.drop(keys)
        if keys is None:
            self.pending.clear()
        else:
            self.take(keys)

    def take(self, keys: set[TopicPartitionKey]) -> list[PartitionBatch]:
        """Remove the pending batches of `keys` and return them, in order."""
        taken = [b for b in self.pending if b.key in keys]
        self.pending = deque(b for b in self.pending if b.key not in keys)
        return taken

    def forget(self, keys: set[TopicPartitionKey]) -> None:
        """Partitions no longer owned: nothing of them is written or committed any more."""
        self.drop(keys)
        self.positions.forget(keys)

    def close(self) -> None:
        """The last write, if it has not started, is cancelled; if it has, waited for."""
        if self._own:
            self._worker.shutdown(wait=True, cancel_futures=True)
        elif self._last is not None and not self._last.cancel():
            futures.wait([self._last])
