"""Where a consumer group stands, and moving it: to the earliest offset, a time or an offset.

Moving offsets needs the group to be idle: stop its consumers first.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    TopicPartition,
)

from schemas.errors import ConfigError, ServiceUnavailableError
from services.group_positions import (
    PartitionOffsets,
    offsets_of,
    partitions_of,
    position_probe,
)
from services.kafka_topics import admin_client, described

TIMEOUT_S = 30


def positions(client_config: Mapping[str, Any], group: str, topic: str) -> list[PartitionOffsets]:
    """Per partition: the group's committed offset, the watermarks, and whether a
    read_committed reader has anything left after the committed offset. On a transactional
    topic each transaction ends in a commit marker that no reader ever returns, so a group
    that has read everything still sits one offset (or more) below the high watermark."""
    found = position_probe(client_config, group)
    try:
        partitions = [TopicPartition(topic, p) for p in partitions_of(found, topic)]
        return offsets_of(found, topic, found.committed(partitions, timeout=TIMEOUT_S))
    except KafkaException as exc:
        raise ServiceUnavailableError(f"cannot read offsets of group {group}: {exc}") from exc
    finally:
        found.close()


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
        chosen = partitions if partitions is not None else partitions_of(probe, topic)
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
