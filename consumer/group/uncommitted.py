"""Everything this member has read from Kafka and not yet committed, in one place.

A message read is, in turn: in its partition's open batch (`Batcher`, consumer/group/batch.py);
in a closed batch that is pending, then in flight to ClickHouse, then owed its commit
(`CommitQueue`, consumer/group/commit.py); then committed, and forgotten. `Uncommitted` owns both,
where each owned partition's offsets stand, and which partitions were read to their end.
Every way out is one call on it:

- `poll`: the commit path moves on. A transient failure drops everything read, and the
  outcome says where to read again from: the committed offsets, with each recorded batch
  end cut at again, so a batch read again carries the same deduplication token;
- `revoke`: partitions taken away are written and committed first, in order;
- `lose`: partitions the group moved on without are dropped unwritten;
- `abandon`: stopping on an error, everything stays uncommitted;
- `drain`: stopping, everything is written and committed until a deadline; what is left
  then stays uncommitted.

After `abandon` or `drain` nothing more is written, not even by the revoke that closing the
consumer fires: what is left is read again by the partitions' next owner.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from consumer.group import drain
from consumer.group.batch import Batcher, TopicPartitionKey
from consumer.group.commit import CommitQueue
from consumer.group.units import recorded
from schemas.errors import TransientError

log = logging.getLogger(__name__)
Keys = set[TopicPartitionKey]


@dataclass(frozen=True)
class Outcome:
    """What `poll` did: batches written, or the transient failure that dropped what was read
    and where to read again from (`rewind`)."""

    written: int = 0
    failed: TransientError | None = None
    rewind: list[TopicPartition] = field(default_factory=list)


class Uncommitted:
    """The only holder of batches not yet committed: the loop, the rebalance callbacks and
    the stop each make one call on it, and it keeps the open batches, the commit queue and
    the partitions' offsets in step."""

    def __init__(self, batcher: Batcher, queue: CommitQueue) -> None:
        self.batcher = batcher
        self.queue = queue
        self._ended: Keys = set()  # read to the end, nothing read after it yet
        self._failure: TransientError | None = None  # everything dropped; `poll` rewinds
        self._closed = False  # drained or abandoned: nothing more is written

    @property
    def assigned(self) -> Keys:
        return set(self.queue.positions.committed)

    @property
    def busy(self) -> bool:
        return self.queue.busy

    def buffered_rows(self) -> int:
        return self.batcher.buffered_rows()

    def assign(self, committed: list[TopicPartition]) -> list[TopicPartition]:
        """Newly assigned partitions, at the offsets their group committed; returns where
        each starts reading (there, else at the earliest)."""
        self.queue.positions.track(committed)
        return [self._restart(tp) for tp in committed]

    def submit(self, messages: list[Message]) -> None:
        """A consume() chunk without errors, batched per partition; full batches queue."""
        if self._failure is None:  # until the rewind, nothing read is kept
            self.queue.submit(self.batcher.extend(messages))
            self._ended -= self.batcher.last_seen

    def ended(self, key: TopicPartitionKey) -> None:
        """The partition was read to its end (consumer/group/batch.py `ended` cuts its batch)."""
        self._ended.add(key)
        self.queue.submit(self.batcher.ended(self._ended))

    def cut_due(self) -> None:
        self.queue.submit(self.batcher.due())

    def caught_up(self, partitions: frozenset[TopicPartitionKey]) -> bool:
        """Every partition owned, and each of `partitions`, read to its end, with no closed
        batch waiting (what is open or in flight is the drain's)."""
        owned = self.assigned
        waiting = self.queue.pending or self.queue.retry
        return bool(owned) and not waiting and owned | partitions <= self._ended

    @property
    def settled(self) -> bool:
        """Nothing buffered, queued, in flight or owed, and no failure to rewind from."""
        q = self.queue
        return self._failure is None and not (self.batcher.holding or q.busy or q.positions.owing)

    @property
    def full(self) -> bool:
        """More closed batches wait for ClickHouse than may (consumer/group/commit.py)."""
        return self.queue.full

    def poll(self, wait: bool = True) -> Outcome:
        """Settle the write in flight if it is done, start the next, send the owed commits
        (waiting for the write while `full`, if `wait`); after a transient failure, where to
        read again from."""
        if self._failure is None:
            try:
                return Outcome(written=self.queue.advance(wait))
            except TransientError as exc:
                self._fail(exc)
        return self._rewind()

    def revoke(self, keys: Keys) -> None:
        """Partitions taken away: what was read of them is written and committed first, in
        order, each batch waited for; a transient error leaves the rest of that partition
        uncommitted for its next owner."""
        if not self._closed and self._failure is None:
            try:
                self.queue.settle()  # the write in flight first: batches keep their order
            except TransientError as exc:
                self._fail(exc)
                log.warning("revoked partition left uncommitted", extra={"error": str(exc)[:300]})
            else:
                drain.write_through(
                    self.queue, self.queue.take(keys) + self.batcher.close(list(keys))
                )
        self._forget(keys)

    def lose(self, keys: Keys) -> int:
        """Partitions the group moved on without: dropped unwritten (a write in flight for
        one is waited for and left uncommitted). Returns the buffered messages dropped."""
        dropped = self.batcher.drop(keys)
        self._forget(keys)
        return dropped

    def abandon(self) -> None:
        """Stopping on an error: the write in flight is waited for, and everything stays
        uncommitted."""
        self._close(wait=True)

    def drain(self, deadline: float, max_backoff_s: float) -> bool:
        """Stopping: write and commit everything read, retrying transient errors until
        `deadline`. What is left then stays uncommitted, a write still running included.
        True when everything was committed."""
        done = False
        if self._failure is None and not self._closed:
            self.queue.submit(self.batcher.close())
            done = drain.drain(self.queue, deadline, max_backoff_s)
        self._close(wait=False)
        return done

    def close(self) -> None:
        self.queue.close()

    def _fail(self, error: TransientError) -> None:
        """A write or a commit failed: everything read is dropped until `poll` rewinds."""
        self._failure = error
        self.queue.drop()
        self.batcher.drop()
        self._ended.clear()

    def _rewind(self) -> Outcome:
        failed, self._failure = self._failure, None
        starts = [self._restart(tp) for tp in self.queue.positions.committed.values()]
        return Outcome(failed=failed, rewind=starts)

    def _restart(self, committed: TopicPartition) -> TopicPartition:
        """The partition is read again from its committed offset (else from the earliest),
        and a batch end recorded there is cut at again; returns where it starts."""
        key = (committed.topic, committed.partition)
        self.batcher.drop([key])
        self._ended.discard(key)
        found = recorded(committed)
        self.queue.recorded.pop(key, None)
        if found is not None:
            self.batcher.cut_at(key, found.end)
            self.queue.recorded[key] = found  # the batch cut there is written in its unit
        offset = committed.offset if committed.offset >= 0 else OFFSET_BEGINNING
        return TopicPartition(key[0], key[1], offset)

    def _forget(self, keys: Keys) -> None:
        self.queue.forget(keys)
        self.batcher.drop(keys)
        self._ended -= keys

    def _close(self, wait: bool) -> None:
        self._closed = True
        self.queue.drop(wait=wait)
        self.batcher.drop()
        self._ended.clear()
