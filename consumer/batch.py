"""One batch per partition, cut by rows, bytes or age (defaults: 100k rows or 5 s).

A batch keeps the messages of one (topic, partition) in offset order, tombstones included
so that committing moves past them; only non-null values are inserted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

TopicPartitionKey = tuple[str, int]


@dataclass
class PartitionBatch:
    topic: str
    partition: int
    first_offset: int
    last_offset: int = -1
    messages: list[Any] = field(default_factory=list)  # confluent_kafka.Message, values not null
    nbytes: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def key(self) -> TopicPartitionKey:
        return (self.topic, self.partition)

    @property
    def dedup_token(self) -> str:
        """`<topic>-<partition>-<first offset>-<last offset>`: a retried insert of the same
        batch is dropped by ClickHouse."""
        return f"{self.topic}-{self.partition}-{self.first_offset}-{self.last_offset}"

    def values(self) -> list[bytes]:
        return [message.value() for message in self.messages]


@dataclass(frozen=True)
class Limits:
    rows: int = 100_000
    nbytes: int = 64 * 1024 * 1024
    seconds: float = 5.0


class Batcher:
    """Buffers messages per partition; `add` returns a batch as soon as it is full."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._open: dict[TopicPartitionKey, PartitionBatch] = {}
        # Offset at which a partition's next batch must end, so that a batch inserted before
        # a crash is cut the same way after the restart and its dedup token matches.
        self._cut_at: dict[TopicPartitionKey, int] = {}

    def cut_at(self, key: TopicPartitionKey, offset: int) -> None:
        self._cut_at[key] = offset

    def add(self, message: Any) -> list[PartitionBatch]:
        """Buffer one message; returns the batches it completed (at most two)."""
        key = (message.topic(), message.partition())
        offset = message.offset()
        done: list[PartitionBatch] = []
        cut = self._cut_at.get(key)
        if cut is not None and offset > cut:  # the cut offset is gone: cut before this one
            if key in self._open:
                done.append(self._close(key))
            self._cut_at.pop(key, None)
            cut = None
        batch = self._open.get(key)
        if batch is None:
            batch = self._open[key] = PartitionBatch(key[0], key[1], offset)
        batch.last_offset = offset
        value = message.value()
        if value is not None:
            batch.messages.append(message)
            batch.nbytes += len(value)
        limits = self.limits
        if (
            len(batch.messages) >= limits.rows
            or batch.nbytes >= limits.nbytes
            or (cut is not None and offset >= cut)
        ):
            done.append(self._close(key))
        return done

    def due(self, now: float | None = None) -> list[PartitionBatch]:
        """Batches older than the time limit, closed."""
        now = time.monotonic() if now is None else now
        old = [k for k, b in self._open.items() if now - b.started >= self.limits.seconds]
        return [self._close(key) for key in old]

    def close(self, keys: list[TopicPartitionKey] | None = None) -> list[PartitionBatch]:
        """Close the open batches of `keys` (all when None)."""
        chosen = list(self._open) if keys is None else [k for k in keys if k in self._open]
        return [self._close(key) for key in chosen]

    def drop(self, keys: list[TopicPartitionKey]) -> int:
        """Forget buffered messages of lost partitions; returns how many were dropped."""
        dropped = 0
        for key in keys:
            batch = self._open.pop(key, None)
            dropped += len(batch.messages) if batch else 0
            self._cut_at.pop(key, None)
        return dropped

    def open_keys(self) -> list[tuple[TopicPartitionKey, int]]:
        """(partition, buffered rows) of every open batch."""
        return [(key, len(batch.messages)) for key, batch in self._open.items()]

    def buffered_rows(self) -> int:
        return sum(len(batch.messages) for batch in self._open.values())

    def _close(self, key: TopicPartitionKey) -> PartitionBatch:
        batch = self._open.pop(key)
        cut = self._cut_at.get(key)
        if cut is not None and batch.last_offset >= cut:
            del self._cut_at[key]
        return batch
