"""One look at every table due (verify/watch.py), in the order verify/consumed.py numbers
its steps, each step asked for all the tables at once rather than a request a table and
partition:
1. each topic's progress, from what the kept reader has fetched (KafkaLooks.together);
2. then the partitions' ends of every topic: one metadata request, and each offset kind of
   all partitions in one ListOffsets request (services/offsets_together.py). Read after
   step 1, so a mark made from them covers every message of the version step 1 read;
3. each group's committed offsets, every group asked at once, and where a group is behind,
   whether anything readable is left after its offset: one read of all such partitions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import TopicPartition

from schemas.progress import Position
from services.group_positions import PartitionOffsets, nothing_left_in
from services.offsets_together import TIMEOUT_S, committed_together, ends_together

Due = tuple[str, str]  # (topic, group)


@dataclass(frozen=True)
class Look:
    """What one look found for a topic and the group that fills a table from it."""

    position: Position  # step 1
    high: dict[int, int]  # step 2: partition -> high watermark, read after `position`
    stable: dict[int, int]  # partition -> last stable offset
    offsets: list[PartitionOffsets]  # step 3: the group's


def offsets_together(
    admin: Any, probe: Any, due: Sequence[Due]
) -> dict[Due, tuple[dict[int, int], dict[int, int], list[PartitionOffsets]]]:
    """Steps 2 and 3 for every (topic, group) due whose topic the brokers know; probe: a
    read_committed consumer that only assigns."""
    wanted = sorted(set(due))
    metadata = admin.list_topics(timeout=TIMEOUT_S).topics  # one request for every topic
    partitions = {
        topic: sorted(metadata[topic].partitions)
        for topic in {t for t, _ in wanted}
        if topic in metadata and metadata[topic].error is None
    }
    wanted = [(t, g) for t, g in wanted if t in partitions]
    ends = ends_together(admin, [TopicPartition(t, p) for t in partitions for p in partitions[t]])
    asked: dict[str, list[TopicPartition]] = defaultdict(list)
    for topic, group in wanted:
        asked[group] += [TopicPartition(topic, p) for p in partitions[topic]]
    offsets: dict[Due, list[PartitionOffsets]] = defaultdict(list)
    for group, committed in committed_together(admin, asked).items():
        for tp in committed:
            key = (tp.topic, tp.partition)
            offsets[(tp.topic, group)].append(
                PartitionOffsets(tp.partition, tp.offset, ends.low[key], ends.stable[key])
            )
    caught_up = _nothing_left(probe, offsets)
    return {
        (topic, group): (
            {p: ends.high[(topic, p)] for p in partitions[topic]},
            {p: ends.stable[(topic, p)] for p in partitions[topic]},
            [
                replace(p, caught_up=(topic, p.partition, p.start) in caught_up)
                for p in offsets[(topic, group)]
            ],
        )
        for topic, group in wanted
    }


def _nothing_left(
    probe: Any, offsets: dict[Due, list[PartitionOffsets]]
) -> set[tuple[str, int, int]]:
    """(topic, partition, offset) of each partition a group is behind on where nothing
    readable is left after the group's offset: read once for every group at that offset,
    and in batches where groups stand at different offsets (the probe holds a partition at
    one offset at a time)."""
    batches: list[dict[tuple[str, int], PartitionOffsets]] = []
    for (topic, _), found in offsets.items():
        for p in (p for p in found if p.lag > 0):
            key = (topic, p.partition)
            if any(b.get(key) is not None and b[key].start == p.start for b in batches):
                continue  # read already, for another group at the same offset
            batch = next((b for b in batches if key not in b), None)
            if batch is None:
                batches.append(batch := {})
            batch[key] = p
    at_end: set[tuple[str, int, int]] = set()
    for batch in batches:
        ended = nothing_left_in(probe, [(topic, p) for (topic, _), p in batch.items()])
        at_end |= {
            (topic, partition, batch[(topic, partition)].start) for topic, partition in ended
        }
    return at_end
