"""Where a consumer group stands, and moving it: to the earliest offset, a time or an offset.

Moving offsets needs the group to be idle: stop its consumers first.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from schemas.errors import ConfigError, ServiceUnavailableError
from services.kafka_topics import admin_client, described

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


def positions(client_config: Mapping[str, Any], group: str, topic: str) -> list[PartitionOffsets]:
    """Per partition: the group's committed offset, the watermarks, and whether a
    read_committed reader has anything left after the committed offset. On a transactional
    topic each transaction ends in a commit marker that no reader ever returns, so a group
    that has read everything still sits one offset (or more) below the high watermark."""
    probe = Consumer(
        {
            **client_config,
            "group.id": group,  # assign() only: never joins the group nor commits
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 1024 * 1024,  # one message per partition is all it needs
            "fetch.wait.max.ms": 10,  # at the end, answered at once
        }
    )
    try:
        partitions = [TopicPartition(topic, p) for p in _partitions(probe, topic)]
        committed = probe.committed(partitions, timeout=TIMEOUT_S)
        found = []
        for tp in committed:
            low, high = probe.get_watermark_offsets(tp, timeout=TIMEOUT_S)
            found.append(PartitionOffsets(tp.partition, tp.offset, low, high))
        at_end = nothing_left(probe, topic, [p for p in found if p.lag > 0])
        return [replace(p, caught_up=p.partition in at_end) for p in found]
    except KafkaException as exc:
        raise ServiceUnavailableError(f"cannot read offsets of group {group}: {exc}") from exc
    finally:
        probe.close()


def nothing_left(probe: Consumer, topic: str, behind: list[PartitionOffsets]) -> set[int]:
    """The partitions of `behind` where a read_committed read from the group's offset meets
    the end before any message."""
    undecided = {p.partition for p in behind}
    probe.assign([TopicPartition(topic, p.partition, p.start) for p in behind])
    at_end: set[int] = set()
    deadline = time.monotonic() + TIMEOUT_S
    while undecided:
        if time.monotonic() > deadline:
            raise ServiceUnavailableError(
                f"reading partitions {sorted(undecided)} of {topic} took over {TIMEOUT_S} s"
            )
        message = probe.poll(0.5)
        partition = message.partition() if message is not None else None
        if message is None or partition is None or partition not in undecided:
            continue
        error = message.error()
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            raise KafkaException(error)
        if error is not None:
            at_end.add(partition)
        undecided.discard(partition)
        probe.pause([TopicPartition(topic, partition)])
    return at_end


def targets(
    client_config: Mapping[str, Any],
    topic: str,
    *,
    earliest: bool = False,
    at: datetime | None = None,
    offset: int | None = None,
    partitions: list[int] | None = None,
) -> list[TopicPartition]:
    """The offsets to move to: the earliest, the first at or after `at`, or `offset`."""
    if sum((earliest, at is not None, offset is not None)) != 1:
        raise ConfigError("choose one of --to-earliest, --to-datetime or --to-offset")
    probe = Consumer({**client_config, "group.id": "cdfbridge-offsets-probe"})
    try:
        chosen = partitions if partitions is not None else _partitions(probe, topic)
        if at is not None:
            millis = int(at.timestamp() * 1000)
            asked = [TopicPartition(topic, p, millis) for p in chosen]
            found = probe.offsets_for_times(asked, timeout=TIMEOUT_S)
            ends = {p: probe.get_watermark_offsets(TopicPartition(topic, p))[1] for p in chosen}
            return [
                TopicPartition(
                    topic, tp.partition, tp.offset if tp.offset >= 0 else ends[tp.partition]
                )
                for tp in found
            ]
        if earliest:
            lows = [probe.get_watermark_offsets(TopicPartition(topic, p))[0] for p in chosen]
            return [TopicPartition(topic, p, low) for p, low in zip(chosen, lows, strict=True)]
        assert offset is not None  # noqa: S101 - one of the three was given
        return [TopicPartition(topic, p, offset) for p in chosen]
    finally:
        probe.close()


def reset(client_config: Mapping[str, Any], group: str, offsets: list[TopicPartition]) -> None:
    """Move the group's offsets. Kafka refuses a group with running consumers partition by
    partition, in the result and not as an exception: each partition's error is checked."""
    admin = admin_client(client_config)
    request = [ConsumerGroupTopicPartitions(group, offsets)]
    try:
        done = admin.alter_consumer_group_offsets(request)[group].result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise _unmoved(group, str(exc.args[0])) from exc
    refused = [tp for tp in done.topic_partitions or [] if tp.error is not None]
    if refused:
        first = refused[0].error
        which = ", ".join(str(tp.partition) for tp in refused)
        raise _unmoved(group, f"partitions {which}: {first.name()}: {first.str()}")


def _unmoved(group: str, why: str) -> ConfigError:
    return ConfigError(
        f"cannot move the offsets of group {group} ({why}); a group with running consumers "
        "cannot be moved: stop them first"
    )


def exists(client_config: Mapping[str, Any], topic: str) -> bool:
    """Whether the brokers know the topic, described without creating it (a topic made by
    asking would have the broker's partition count and retention, not the producer's)."""
    admin = admin_client(client_config)
    try:
        return topic in described(admin, [topic])
    except KafkaException as exc:
        raise ServiceUnavailableError(f"cannot describe topic {topic}: {exc}") from exc


def members(client_config: Mapping[str, Any], group: str) -> int:
    """How many consumers the group has now (0 for a group that does not exist)."""
    admin = admin_client(client_config)
    try:
        found = admin.describe_consumer_groups([group])[group].result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise ServiceUnavailableError(f"cannot describe group {group}: {exc}") from exc
    return len(found.members)


def committed(client_config: Mapping[str, Any], group: str, topic: str) -> dict[int, int]:
    """The offsets the group has committed on topic, by partition (those it has)."""
    found = positions(client_config, group, topic)
    return {p.partition: p.committed for p in found if p.committed >= 0}


def at(topic: str, offsets: Mapping[int, int]) -> list[TopicPartition]:
    """offsets (partition → offset) as TopicPartitions of topic."""
    return [TopicPartition(topic, partition, offset) for partition, offset in offsets.items()]


def copy(client_config: Mapping[str, Any], topic: str, source: str, group: str) -> None:
    """Give `group` the offsets `source` has committed on topic (the group must be idle)."""
    reset(client_config, group, at(topic, committed(client_config, source, topic)))


def _partitions(probe: Consumer, topic: str) -> list[int]:
    metadata = probe.list_topics(topic, timeout=TIMEOUT_S).topics[topic]
    if metadata.error is not None:
        raise ConfigError(f"topic {topic}: {metadata.error}")
    return sorted(metadata.partitions)
