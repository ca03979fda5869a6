"""A group's position in a topic, partition by partition, read through a *probe*: a
consumer that only assigns, never joins the group nor commits, and reads a message at most
per partition. services/offsets.py `positions` makes one for a look; verify keeps its own
(verify/kafka_looks.py)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from schemas.errors import ConfigError, ServiceUnavailableError

TIMEOUT_S = 30


@dataclass(frozen=True)
class PartitionOffsets:
    partition: int
    committed: int  # -1001 when the group never committed
    low: int
    high: int
    # A read_committed reader at the committed offset finds nothing left to read: what lies
    # between it and `high` is commit markers (or aborted or still open transactions).
    caught_up: bool = False

    @property
    def start(self) -> int:
        """Where the group reads on: the committed offset, else the earliest one kept."""
        return max(self.committed, self.low)

    @property
    def lag(self) -> int:
        """Offsets between the committed one and the end, 0 when nothing readable is left."""
        if self.caught_up:
            return 0
        return self.high - (self.committed if self.committed >= 0 else self.low)


def position_probe(
    client_config: Mapping[str, Any], group: str, isolation: str = "read_committed"
) -> Any:
    """A consumer that only asks for offsets and reads a message at most per partition: it
    assigns, never joins `group` nor commits; its isolation level decides whether a
    partition's end is its last stable offset or its high watermark."""
    return Consumer(
        {
            **client_config,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 1024 * 1024,  # one message per partition is all it needs
            "fetch.wait.max.ms": 10,  # at the end, answered at once
        }
    )


def offsets_of(
    probe: Consumer, topic: str, committed: list[TopicPartition]
) -> list[PartitionOffsets]:
    """Each committed offset with its partition's watermarks, and whether a read_committed
    reader (probe) has anything left after it; the probe is let go of the partitions."""
    found = []
    for tp in committed:
        low, high = probe.get_watermark_offsets(tp, timeout=TIMEOUT_S)
        found.append(PartitionOffsets(tp.partition, tp.offset, low, high))
    behind = [(topic, p) for p in found if p.lag > 0]
    at_end = nothing_left_in(probe, behind)
    return [replace(p, caught_up=(topic, p.partition) in at_end) for p in found]


def nothing_left_in(
    probe: Consumer, behind: Sequence[tuple[str, PartitionOffsets]]
) -> set[tuple[str, int]]:
    """(topic, partition) of each of `behind` where a read_committed read from the group's
    offset meets the end before any message, all read at once. The probe is let go of them
    after: what it paused is resumed, then unassigned, so a kept probe reads again."""
    probe.assign([TopicPartition(topic, p.partition, p.start) for topic, p in behind])
    try:
        return _ends_first(probe, {(topic, p.partition) for topic, p in behind})
    finally:
        probe.resume([TopicPartition(topic, p.partition) for topic, p in behind])
        probe.unassign()


def _ends_first(probe: Consumer, undecided: set[tuple[str, int]]) -> set[tuple[str, int]]:
    at_end: set[tuple[str, int]] = set()
    deadline = time.monotonic() + TIMEOUT_S
    while undecided:
        if time.monotonic() > deadline:
            raise ServiceUnavailableError(
                f"reading partitions {sorted(undecided)} took over {TIMEOUT_S} s"
            )
        message = probe.poll(0.5)
        if message is None:
            continue
        key = (message.topic() or "", message.partition() or 0)
        if key not in undecided:
            continue
        error = message.error()
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            raise KafkaException(error)
        if error is not None:
            at_end.add(key)
        undecided.discard(key)
        probe.pause([TopicPartition(*key)])
    return at_end


def partitions_of(probe: Consumer, topic: str) -> list[int]:
    """The topic's partitions; ConfigError when the brokers do not know it."""
    metadata = probe.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
    if metadata.error is not None:
        raise ConfigError(f"topic {topic}: {metadata.error}")
    return sorted(metadata.partitions)
