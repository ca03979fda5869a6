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
from collections.abc import Callable, Sequence
from concurrent import futures
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from confluent_kafka import TopicPartition

from consumer.group.batch import PartitionBatch, TopicPartitionKey, Written
from consumer.group.positions import Commit, Positions
from consumer.group.units import Recorded, Unit, take

log = logging.getLogger(__name__)
# Closed batches that may wait for ClickHouse while Kafka is read on; past this the loop
# waits for the writes instead (or, on a member other topics share, pauses this topic's
# partitions: consumer/group/backpressure.py), which bounds memory.
QUEUED = 4

Write = Callable[[Unit], list[Written]]  # step 2: BatchWriter.write, a Written per batch
OnWritten = Callable[[PartitionBatch, Written, float], None]  # batch, what it stored, seconds


@dataclass(frozen=True)
class InFlight:
    unit: Unit
    future: Future[list[Written]]
    started: float


class CommitQueue:
    """Steps, in this order, for every write unit (the first pending batch of each partition
    of the topic, consumer/group/units.py):

    1. Record the unit's offsets in the group's commit metadata of each of its partitions,
       at the offset already committed (`_start`). If steps 2–3 do not complete, whoever
       reads a partition next from there (a restart, the next owner, a rewind) cuts the
       same batch again and writes the same unit, so its insert_deduplication_token matches
       and ClickHouse drops the repeat.
    2. Insert the unit into ClickHouse as one block with that token, on the pool
       (`write` adds new optional columns first, and dead-letters messages that do not decode
       or fit, returning once Kafka has acknowledged them).
    3. Only now commit each partition's offset last+1 (`settle`): every message up to it is
       in ClickHouse or the DLQ. While batches queue up, it goes out with the next unit's
       step 1, one request for both; otherwise `flush` sends it.

    A TransientError of any step is raised to the caller, with the offsets where they were.
    """

    def __init__(
        self, write: Write, commit: Commit, on_written: OnWritten, pool: Executor | None = None
    ) -> None:
        """pool: the process's write pool; without one, the queue makes a thread of its own."""
        self.write, self.on_written = write, on_written
        self.pending: deque[PartitionBatch] = deque()
        self.inflight: InFlight | None = None
        self.retry: Unit | None = None  # a unit that failed, written again as it was, first
        self.recorded: dict[TopicPartitionKey, Recorded] = {}  # units to write again
        self.positions = Positions(commit)
        self._own = pool is None
        self._worker = pool or ThreadPoolExecutor(max_workers=1, thread_name_prefix="clickhouse")
        self._last: Future[list[Written]] | None = None  # the last write handed to the pool

    @property
    def busy(self) -> bool:
        return bool(self.pending) or self.inflight is not None or self.retry is not None

    def submit(self, batches: list[PartitionBatch]) -> None:
        self.pending += batches

    def start_next(self) -> None:
        """Steps 1 and 2 for the next unit: the one that failed, else the first pending
        batch's (consumer/group/units.py). It stays `retry` until it is in flight."""
        if self.retry is None:
            self.retry = take(self.pending.popleft(), self.pending, self.recorded)
        self._start(self.retry)

    def _start(self, unit: Unit) -> None:
        """Steps 1 and 2; `settle` comes before the next unit's."""
        assert self.inflight is None  # noqa: S101 - one write at a time keeps the order
        # 1. At each batch's first offset: it stands in for a step 3 owed for the partition.
        for batch in unit.batches:
            intent = unit.intent(batch)
            self.positions.owe(
                TopicPartition(batch.topic, batch.partition, batch.first_offset, metadata=intent)
            )
        self.flush()
        # 2. On the pool, while Kafka is read on.
        self.retry = None
        future = self._last = self._worker.submit(self.write, unit)
        self.inflight = InFlight(unit, future, time.monotonic())

    def settle(self, timeout_s: float | None = None) -> bool:
        """The end of step 2 for the write in flight, and its step 3 owed (sent by the next
        `_start` or `flush`). False while it is still running after `timeout_s`; raises what
        the write raised (then nothing is owed for it, and it is the next to write)."""
        if self.inflight is None:
            return True
        unit, future, started = self.inflight.unit, self.inflight.future, self.inflight.started
        if not future.done() and not futures.wait([future], timeout_s).done:
            return False
        self.inflight = None
        try:
            written = future.result()
        except BaseException:
            self.retry = unit
            raise
        self._owe(unit.batches, written, time.monotonic() - started)
        return True

    def _owe(self, batches: Sequence[PartitionBatch], written: list[Written], s: float) -> None:
        """3. Owed: it goes out with the next unit's step 1, or with `flush`."""
        for batch, stored in zip(batches, written, strict=True):
            self.positions.owe(TopicPartition(batch.topic, batch.partition, batch.last_offset + 1))
            self.on_written(batch, stored, s)

    def flush(self) -> None:
        """Send the owed commits (step 3, and step 1 from `_start`) in one request."""
        self.positions.flush()

    @property
    def full(self) -> bool:
        return len(self.pending) > QUEUED

    def advance(self, wait: bool = True) -> int:
        """Settle the write in flight if it is done, and start the next unit; with nothing
        left to write, send the commits owed. Waits for the write in flight only while
        `full` (and `wait`). Returns how many units were written."""
        written = 0
        while True:
            if self.inflight is not None:
                if not self.settle(None if wait and self.full else 0):
                    return written
                written += 1
            if not self.pending and self.retry is None:
                self.flush()
                return written
            self.start_next()

    def write_now(self, batch: PartitionBatch) -> None:
        """Steps 1 and 2 for one batch (alone, or in its recorded unit), waiting; its step 3
        is owed (`flush`)."""
        self._start(take(batch, deque(), self.recorded))
        self.settle()

    def drop(self, keys: set[TopicPartitionKey] | None = None, wait: bool = True) -> None:
        """Forget the pending batches and owed commits of `keys` (all when None); a write in
        flight for one of them is left uncommitted, once it has ended when `wait`. A unit in
        flight that holds other partitions too is waited for: their commits are owed if it
        was written, else it is written again for them (the same unit, the same token)."""
        inflight, kept = self.inflight, []
        if inflight is not None and (keys is None or inflight.unit.keys & keys):
            kept = [] if keys is None else [b for b in inflight.unit.batches if b.key not in keys]
            if wait or kept:
                error = inflight.future.exception()  # its outcome, whatever it is, is dropped
                if kept and error is None:
                    both = zip(inflight.unit.batches, inflight.future.result(), strict=True)
                    self._owe(kept, [w for b, w in both if b.key not in (keys or ())], 0.0)
                elif kept:
                    self.retry = replace(inflight.unit, batches=tuple(kept))
            self.inflight = None
        if self.retry is not None and (keys is None or self.retry.keys & keys):
            left = [] if keys is None else [b for b in self.retry.batches if b.key not in keys]
            self.retry = replace(self.retry, batches=tuple(left)) if left else None
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
        for key in keys:
            self.recorded.pop(key, None)

    def close(self) -> None:
        """The last write, if it has not started, is cancelled; if it has, waited for."""
        if self._own:
            self._worker.shutdown(wait=True, cancel_futures=True)
        elif self._last is not None and not self._last.cancel():
            futures.wait([self._last])
