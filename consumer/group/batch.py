"""One batch per partition, cut by rows, bytes or age (defaults: 100k rows or 5 s).

A batch keeps only the values of one (topic, partition), in offset order, and its first
and last offset: tombstones (null values) stay in so that committing moves past them, and
are left out of the insert, unless they carry their delete (consumer/group/tombstones.py).
Holding the Message objects instead would cost ~0.5 KiB each and make the garbage
collector walk them all. Messages arrive in chunks (one consume()
call), split per partition with C-level map() and list slices: no per-message bytecode.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import cast

from confluent_kafka import Message

from consumer.group.tombstones import payloads

TopicPartitionKey = tuple[str, int]
# Unbound methods: four times faster in map() than methodcaller. Consumed messages
# always have a topic, a partition and an offset.
_TOPIC = cast(Callable[[Message], str], Message.topic)
_PARTITION = cast(Callable[[Message], int], Message.partition)
_OFFSET = cast(Callable[[Message], int], Message.offset)


@dataclass
class PartitionBatch:
    topic: str
    partition: int
    first_offset: int
    last_offset: int = -1
    payloads: list[bytes | None] = field(default_factory=list)  # values; bare tombstones: None
    nbytes: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> TopicPartitionKey:
        return (self.topic, self.partition)

    @property
    def rows(self) -> int:
        return len(self.payloads)

    @property
    def dedup_token(self) -> str:
        """`<topic>-<partition>-<first offset>-<last offset>`: a retried insert of the same
        batch is dropped by ClickHouse (the sink puts the topic's id before it)."""
        return f"{self.topic}-{self.partition}-{self.first_offset}-{self.last_offset}"

    def values(self) -> list[bytes]:
        """The values to insert: tombstones left out."""
        payloads = self.payloads
        return [v for v in payloads if v is not None] if None in payloads else payloads  # type: ignore[return-value]


@dataclass(frozen=True)
class Written:
    """What writing a batch stored: rows in ClickHouse, messages in the dead-letter topic."""

    rows: int
    dead_letters: int
    # The commit times (epoch s) of its first and last rows, where read (consumer/freshness.py).
    committed: tuple[float, float] | None = None


# Partitions read to their end cut batches of at least 1/ENDED_CUT of the row limit.
ENDED_CUT = 100


@dataclass(frozen=True)
class Limits:
    rows: int = 100_000
    nbytes: int = 64 * 1024 * 1024
    seconds: float = 5.0


class Batcher:
    """Buffers messages per partition; `extend` returns the batches that became full."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._open: dict[TopicPartitionKey, PartitionBatch] = {}
        # Offset at which a partition's next batch must end, so that a batch inserted before
        # a crash is cut the same way after the restart and its dedup token matches.
        self._cut_at: dict[TopicPartitionKey, int] = {}
        self.last_seen: set[TopicPartitionKey] = set()  # partitions of the last chunk

    def cut_at(self, key: TopicPartitionKey, offset: int) -> None:
        self._cut_at[key] = offset

    def extend(self, messages: Sequence[Message]) -> list[PartitionBatch]:
        """Buffer messages (no errors among them) of any topics; returns the batches they
        completed. Consecutive messages of a (topic, partition) are taken as one run, in C:
        runs by partition number, split by topic only where a run holds two topics."""
        self.last_seen = set()
        done: list[PartitionBatch] = []
        for partition, run in groupby(messages, key=_PARTITION):
            chunk = list(run)
            runs = [(_TOPIC(chunk[0]), chunk)]
            if len(set(map(_TOPIC, chunk))) > 1:
                runs = [(topic, list(part)) for topic, part in groupby(chunk, key=_TOPIC)]
            for topic, part in runs:
                key = (topic, partition)
                self.last_seen.add(key)
                done += self._extend(key, part)
        return done

    def _extend(self, key: TopicPartitionKey, chunk: list[Message]) -> list[PartitionBatch]:
        done: list[PartitionBatch] = []
        while chunk:
            batch = self._open.get(key)
            if batch is None:
                batch = self._open[key] = PartitionBatch(key[0], key[1], _OFFSET(chunk[0]))
            take = self._room(key, batch, chunk)
            if take == 0:  # the recorded cut lies before this chunk: close what is open
                done.append(self._close(key))
                continue
            part, chunk = chunk[:take], chunk[take:]
            batch.payloads += payloads(part)
            batch.last_offset = _OFFSET(part[-1])
            batch.nbytes += sum(map(len, part))  # len(message) is its value's length
            full = batch.rows >= self.limits.rows or batch.nbytes >= self.limits.nbytes
            if full or chunk or self._cut_reached(key, batch):
                done.append(self._close(key))
        return done

    def _room(self, key: TopicPartitionKey, batch: PartitionBatch, chunk: list[Message]) -> int:
        """How many of `chunk` fit in `batch`: up to the row limit and the recorded cut."""
        take = min(len(chunk), max(1, self.limits.rows - batch.rows))
        cut = self._cut_at.get(key)
        if cut is not None:
            take = bisect_right(chunk, cut, hi=take, key=_OFFSET)  # offsets increase
            if take == 0:  # the recorded end is gone: start afresh past it
                del self._cut_at[key]
                if batch.payloads:
                    return 0
                take = min(len(chunk), self.limits.rows)
        return take

    def _cut_reached(self, key: TopicPartitionKey, batch: PartitionBatch) -> bool:
        cut = self._cut_at.get(key)
        return cut is not None and batch.last_offset >= cut

    def ended(self, ended: set[TopicPartitionKey]) -> list[PartitionBatch]:
        """Partitions were read to their end (`ended`): once they hold a hundredth of the row
        limit (1,000 rows by default), their batches are cut now, not at their age limit:
        all together when no other partition has an open batch, so that they make one insert
        (consumer/group/units.py), else each one that holds that much alone. Waiting would
        add latency, not rows, and the Kafka engine cuts its blocks when the topic runs dry
        too; a trickle still waits, so that ClickHouse is not sent a part per message."""
        least = self.limits.rows // ENDED_CUT
        done = [key for key in self._open if key in ended]
        if len(done) < len(self._open) or sum(self._open[k].rows for k in done) < least:
            done = [key for key in done if self._open[key].rows >= least]
        return [self._close(key) for key in done]

    def due(self, now: float | None = None) -> list[PartitionBatch]:
        """Batches older than the time limit, closed."""
        now = time.monotonic() if now is None else now
        old = [k for k, b in self._open.items() if now - b.started >= self.limits.seconds]
        return [self._close(key) for key in old]

    def close(self, keys: list[TopicPartitionKey] | None = None) -> list[PartitionBatch]:
        """Close the open batches of `keys` (all when None)."""
        chosen = list(self._open) if keys is None else [k for k in keys if k in self._open]
        return [self._close(key) for key in chosen]

    def drop(self, keys: Iterable[TopicPartitionKey] | None = None) -> int:
        """Forget the buffered messages and recorded cuts of `keys` (all when None); returns
        how many messages were dropped."""
        chosen = set(self._open) | set(self._cut_at) if keys is None else keys
        dropped = 0
        for key in chosen:
            batch = self._open.pop(key, None)
            dropped += batch.rows if batch else 0
            self._cut_at.pop(key, None)
        return dropped

    def buffered_rows(self) -> int:
        return sum(batch.rows for batch in self._open.values())

    @property
    def holding(self) -> bool:
        """Some partition has an open batch."""
        return bool(self._open)

    def _close(self, key: TopicPartitionKey) -> PartitionBatch:
        batch = self._open.pop(key)
        if self._cut_reached(key, batch):
            del self._cut_at[key]
        return batch
