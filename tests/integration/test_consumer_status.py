"""`status` on a transactional topic, as the producer writes it: every transaction ends in a
commit marker no reader returns, so a group that has read everything is not behind."""

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from services import offsets
from services.group_positions import PartitionOffsets
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def transaction(producer: Any, topic: str, values: list[bytes], commit: bool = True) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value, b"k")
    if commit:
        producer.commit_transaction(30)
    else:
        producer.flush(30)


def commit(endpoints: Endpoints, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": endpoints.kafka, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def lag(endpoints: Endpoints, group: str, topic: str) -> PartitionOffsets:
    [found] = offsets.positions({"bootstrap.servers": endpoints.kafka}, group, topic)
    return found


def test_a_group_past_the_last_transactional_message_has_no_lag(
    endpoints: Endpoints, topic_factory: Callable[..., str]
) -> None:
    topic, group = topic_factory(partitions=1), unique("group")
    producer = Producer({"bootstrap.servers": endpoints.kafka, "transactional.id": unique("t")})
    producer.init_transactions(30)
    transaction(producer, topic, [b"a", b"b", b"c"])  # offsets 0-2, marker 3
    commit(endpoints, group, topic, 3)  # last message + 1, as the consumer commits

    caught_up = lag(endpoints, group, topic)
    assert (caught_up.committed, caught_up.high, caught_up.lag) == (3, 4, 0)

    transaction(producer, topic, [b"d"])  # offset 4, marker 5: one message unread
    behind = lag(endpoints, group, topic)
    assert (behind.high, behind.lag) == (6, 3)

    commit(endpoints, group, topic, 5)
    transaction(producer, topic, [b"e"], commit=False)  # open: read_committed sees nothing
    try:
        assert lag(endpoints, group, topic).lag == 0
    finally:
        producer.abort_transaction(30)


def test_a_group_that_never_committed_is_behind_by_the_whole_partition(
    endpoints: Endpoints, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(partitions=1)
    producer = Producer({"bootstrap.servers": endpoints.kafka, "transactional.id": unique("t")})
    producer.init_transactions(30)
    transaction(producer, topic, [b"a", b"b"])

    assert lag(endpoints, unique("group"), topic).lag == 3  # two messages and their marker
