"""The newest Delta version a replica has consumed whole: the version an as-of comparison
may be made at (verify/asof.py).

The steps, in this order, at each look:
1. read the progress record: version P is fully published, its transaction committed;
2. then read the data partitions' high watermarks: every message of P's transaction was
   written before it committed, so each lies below them. (P, watermarks) is a *mark*;
3. later, the replica has consumed P once, on every partition, the group's committed offset
   (the consumer commits after its insert) is at the mark's watermark or past it, or
   nothing readable is left after it while the partition's last stable offset is past the
   mark: every transaction below the mark has ended there (a commit marker is written
   partition by partition), so none of its messages can still appear.
The newest mark that every partition has passed gives the version; the older marks go.
The Python consumer's group and a Kafka-engine table's group are read alike, through the
process's kept clients (verify/kafka_looks.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from services.group_positions import PartitionOffsets
from verify.kafka_looks import KafkaLooks
from verify.look_together import Look

MARKS = 64  # kept per table: a consumer far behind is judged by the oldest


@dataclass(frozen=True)
class Mark:
    version: int
    ends: dict[int, int]  # partition -> high watermark, read after `version` was published
    generation: int = 0  # the topic's generation `version` belongs to


def passed(mark: Mark, offsets: Mapping[int, PartitionOffsets], stable: Mapping[int, int]) -> bool:
    """3.: the group has consumed everything the mark covers."""
    for partition, end in mark.ends.items():
        found = offsets.get(partition)
        if found is None:
            return False
        if found.committed >= end:
            continue
        if found.lag > 0 or stable.get(partition, -1) < end:
            return False
    return True


class Consumed:
    """One table's marks, and the version its group has consumed."""

    def __init__(self, looks: KafkaLooks, topic: str, group: str) -> None:
        self.looks, self.topic, self.group = looks, topic, group
        self.marks: deque[Mark] = deque(maxlen=MARKS)
        self.last: int | None = None  # the version the last look found consumed
        self.generation = 0  # ... and its generation

    def follow(self, group: str) -> None:
        """Judge by `group` from now on: the marks are the topic's, and stay."""
        self.group = group

    def version(self, look: Look | None = None) -> int | None:
        """The newest version consumed whole, or None while no mark is passed; look: what
        a look at every table due found for this one, else it looks for itself."""
        self._mark(look)
        if not self.marks:
            return None  # nothing published yet (the topic may not exist yet)
        if look is not None:
            stable, offsets = look.stable, look.offsets
        else:
            stable = self.looks.ends(self.topic, committed=True)
            offsets = self.looks.positions(self.group, self.topic)
        found = {p.partition: p for p in offsets}
        for index in range(len(self.marks) - 1, -1, -1):
            mark = self.marks[index]
            if passed(mark, found, stable):
                for _ in range(index):
                    self.marks.popleft()
                self.last, self.generation = mark.version, mark.generation
                return mark.version
        return None

    @property
    def newest_generation(self) -> int:
        """The generation of the newest version published: the Delta table now at the path."""
        return self.marks[-1].generation if self.marks else 0

    def _mark(self, look: Look | None) -> None:
        """Steps 1 and 2."""
        position = look.position if look is not None else self.looks.progress(self.topic)
        version, generation = position.version, position.generation.number
        newest = self.marks[-1] if self.marks else None
        if version is None or (
            newest and (newest.version, newest.generation) == (version, generation)
        ):
            return
        ends = look.high if look is not None else self.looks.ends(self.topic, committed=False)
        self.marks.append(Mark(version, ends, generation))
