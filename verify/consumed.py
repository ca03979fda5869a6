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
The Python consumer's group and a Kafka-engine table's group are read alike.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.offsets import PartitionOffsets, positions
from services.partition_ends import high_watermarks, stable_offsets
from services.progress_topic import Progress

MARKS = 64  # kept per table: a consumer far behind is judged by the oldest


@dataclass(frozen=True)
class Mark:
    version: int
    ends: dict[int, int]  # partition -> high watermark, read after `version` was published


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

    def __init__(self, kafka_config: Mapping[str, Any], topic: str, group: str) -> None:
        self.kafka_config, self.topic, self.group = dict(kafka_config), topic, group
        self.marks: deque[Mark] = deque(maxlen=MARKS)

    def version(self) -> int | None:
        """The newest version consumed whole, or None while no mark is passed."""
        self._mark()
        if not self.marks:
            return None  # nothing published yet (the topic may not exist yet)
        stable = stable_offsets(self.kafka_config, self.topic)
        found = {p.partition: p for p in positions(self.kafka_config, self.group, self.topic)}
        for index in range(len(self.marks) - 1, -1, -1):
            mark = self.marks[index]
            if passed(mark, found, stable):
                for _ in range(index):
                    self.marks.popleft()
                return mark.version
        return None

    def _mark(self) -> None:
        """Steps 1 and 2."""
        version = Progress(self.kafka_config, self.topic).last_version()
        if version is None or (self.marks and self.marks[-1].version == version):
            return
        self.marks.append(Mark(version, high_watermarks(self.kafka_config, self.topic)))
