"""The offsets of many topics' partitions and of many groups in a few requests, not one a
partition: each offset kind of every partition in one ListOffsets request a broker
(`AdminClient.list_offsets`), and every group's committed offsets asked at once, one
request a group (`list_consumer_group_offsets` takes one group a call)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

TIMEOUT_S = 30.0
TopicPartitionKey = tuple[str, int]
EARLIEST: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
LATEST: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]


@dataclass(frozen=True)
class Ends:
    """Each partition's earliest offset, high watermark (what has been written, open
    transactions' messages too) and last stable offset (what a read_committed reader can
    read now)."""

    low: dict[TopicPartitionKey, int]
    high: dict[TopicPartitionKey, int]
    stable: dict[TopicPartitionKey, int]


def ends_together(admin: AdminClient, partitions: Sequence[TopicPartition]) -> Ends:
    """The three ends of every partition: three ListOffsets requests a broker, asked at
    once. Raises KafkaException as the admin client does."""
    if not partitions:
        return Ends({}, {}, {})
    asked = {
        "low": _list(admin, partitions, EARLIEST, IsolationLevel.READ_UNCOMMITTED),
        "high": _list(admin, partitions, LATEST, IsolationLevel.READ_UNCOMMITTED),
        "stable": _list(admin, partitions, LATEST, IsolationLevel.READ_COMMITTED),
    }
    found = {
        kind: {
            (tp.topic, tp.partition): int(future.result(timeout=TIMEOUT_S).offset)
            for tp, future in futures.items()
        }
        for kind, futures in asked.items()
    }
    return Ends(**found)


def committed_together(
    admin: AdminClient, wanted: Mapping[str, Sequence[TopicPartition]]
) -> dict[str, list[TopicPartition]]:
    """Each group's committed offsets of its partitions (-1001 where it never committed),
    every group asked before any answer is waited for."""
    futures: dict[str, Future[Any]] = {}
    for group, partitions in wanted.items():
        asked = [ConsumerGroupTopicPartitions(group, list(partitions))]
        [futures[group]] = admin.list_consumer_group_offsets(asked).values()
    return {
        group: list(future.result(timeout=TIMEOUT_S).topic_partitions)
        for group, future in futures.items()
    }


def _list(
    admin: AdminClient,
    partitions: Sequence[TopicPartition],
    spec: OffsetSpec,
    isolation: IsolationLevel,
) -> dict[TopicPartition, Future[Any]]:
    asked = {TopicPartition(tp.topic, tp.partition): spec for tp in partitions}
    return admin.list_offsets(asked, isolation_level=isolation, request_timeout=TIMEOUT_S)
