"""The process's prefetch memory, split among a topic's partitions as Kafka counts them when
its member starts (consumer/group/kafka.py prefetch_kbytes), on a real Kafka."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from consumer.group.kafka import partition_count, prefetch_kbytes
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def test_a_topics_share_is_split_among_the_partitions_kafka_has_for_it(
    endpoints: Endpoints, topic_factory: Callable[..., str]
) -> None:
    kafka = {"bootstrap.servers": endpoints.kafka}
    five = topic_factory(5)

    assert partition_count(kafka, five) == 5
    assert prefetch_kbytes(50, partition_count(kafka, five)) == 10 * 1024


def test_a_topic_not_created_yet_counts_as_the_producers_default(endpoints: Endpoints) -> None:
    kafka = {"bootstrap.servers": endpoints.kafka}
    missing = unique("not-yet")

    assert partition_count(kafka, missing) is None
    assert prefetch_kbytes(30, partition_count(kafka, missing)) == 10 * 1024
    assert partition_count(kafka, missing) is None  # asking did not create it
