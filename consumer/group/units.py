"""What one insert holds: a table's write unit, the closed batches of several partitions of
its topic, inserted as one block under one deduplication token, then committed together
(consumer/group/commit.py). A topic of three partitions makes one insert a flush, not three.

The unit is recorded before its insert, in the commit metadata of each of its partitions
(step 1): its every partition's range of offsets. Whoever reads one of those partitions
again from there (a restart, the next owner, a rewind) cuts the batch at the recorded end
and writes the recorded unit again, whole: ranges of partitions it does not hold as batches
(owned by another member, or not cut yet) are read again from Kafka by offset. The unit's
token is the same, so ClickHouse drops the repeat, and only the batches it holds are
committed. A unit of one batch keeps the batch's own token and metadata.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from confluent_kafka import TopicPartition

from consumer.group.batch import PartitionBatch, TopicPartitionKey

# Commit metadata naming the last offset of the batch in flight, or the ranges of the unit
# in flight: after a crash or a rewind, it is cut and written the same way again.
INTENT = "cdfbridge:batch-end="
UNIT = "cdfbridge:unit="
# Partitions in one unit: its metadata stays well under Kafka's offset.metadata.max.bytes
# (4096 by default), at up to 27 characters a range.
MAX_PARTITIONS = 32

Range = tuple[int, int, int]  # partition, first offset, last offset


@dataclass(frozen=True)
class Recorded:
    """What step 1 recorded with a committed offset."""

    end: int  # the last offset of the partition's own batch
    ranges: tuple[Range, ...]  # every partition's in the unit, this one's included


def recorded(committed: TopicPartition) -> Recorded | None:
    meta = committed.metadata or ""
    if committed.offset < 0:
        return None
    if meta.startswith(INTENT):
        end = int(meta.removeprefix(INTENT))
        return Recorded(end, ((committed.partition, committed.offset, end),))
    if meta.startswith(UNIT):
        ranges = tuple(_range(part) for part in meta.removeprefix(UNIT).split(","))
        own = [last for p, _, last in ranges if p == committed.partition]
        return Recorded(own[0], ranges) if own else None
    return None


def _range(text: str) -> Range:
    partition, offsets = text.split(":")
    first, last = offsets.split("-")
    return int(partition), int(first), int(last)


@dataclass(frozen=True)
class Unit:
    """One insert: `batches` are this member's, written and committed; the other `ranges`
    (of a recorded unit) are read again for the insert and committed by their owners."""

    topic: str
    batches: tuple[PartitionBatch, ...]
    ranges: tuple[Range, ...]

    @classmethod
    def of(cls, batches: list[PartitionBatch]) -> Unit:
        ranges = sorted((b.partition, b.first_offset, b.last_offset) for b in batches)
        return cls(batches[0].topic, tuple(batches), tuple(ranges))

    @property
    def keys(self) -> set[TopicPartitionKey]:
        return {batch.key for batch in self.batches}

    @property
    def token(self) -> str:
        if len(self.ranges) == 1:
            return self.batches[0].dedup_token
        return f"{self.topic}-" + "+".join(f"{p}:{first}-{last}" for p, first, last in self.ranges)

    def intent(self, batch: PartitionBatch) -> str:
        """Step 1's metadata for the batch's partition."""
        if len(self.ranges) == 1:
            return f"{INTENT}{batch.last_offset}"
        return UNIT + ",".join(f"{p}:{first}-{last}" for p, first, last in self.ranges)

    @property
    def missing(self) -> list[Range]:
        """The ranges of a recorded unit that this member holds no batch of."""
        held = {(b.partition, b.first_offset, b.last_offset) for b in self.batches}
        return [r for r in self.ranges if r not in held]


def take(
    head: PartitionBatch, pending: deque[PartitionBatch], units: dict[TopicPartitionKey, Recorded]
) -> Unit:
    """The unit `head` (taken off `pending` already) is written in: the recorded one it was
    cut for, with the batches of its ranges found pending; else `head` with the first pending
    batch of each other partition, up to MAX_PARTITIONS. Those are taken off `pending`."""
    found = units.pop(head.key, None)
    if found is not None:
        if (head.partition, head.first_offset, head.last_offset) in found.ranges:
            ranges = set(found.ranges)
            taken = [b for b in pending if (b.partition, b.first_offset, b.last_offset) in ranges]
            for batch in taken:
                units.pop(batch.key, None)
            _remove(pending, taken)
            return Unit(head.topic, (head, *taken), found.ranges)
    chosen, seen = [head], {head.key}
    for batch in pending:
        if len(chosen) == MAX_PARTITIONS:
            break
        if batch.key not in seen:
            seen.add(batch.key)
            if batch.key not in units:  # a recorded unit's batch goes in that unit
                chosen.append(batch)
    _remove(pending, chosen[1:])
    return Unit.of(chosen)


def _remove(pending: deque[PartitionBatch], taken: list[PartitionBatch]) -> None:
    if taken:
        ids = set(map(id, taken))
        kept = [b for b in pending if id(b) not in ids]
        pending.clear()
        pending.extend(kept)
