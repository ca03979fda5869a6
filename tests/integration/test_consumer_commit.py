"""The commit after an insert, against a real broker: refusals stop the consumer naming the
partition, while a member the group has moved on from keeps its offsets and retries."""

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer

from consumer.group.batch import PartitionBatch, Written
from consumer.group.commit import CommitQueue
from consumer.group.errors import CommitRefusedError
from consumer.group.kafka import commit
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


@pytest.fixture
def consumer_of(endpoints: Endpoints) -> Iterator[Callable[..., Any]]:
    made: list[Any] = []

    def make(**config: Any) -> Any:
        consumer = Consumer(
            {
                "bootstrap.servers": endpoints.kafka,
                "group.id": unique("group"),
                "enable.auto.commit": False,
                **config,
            }
        )
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close()


def step_one(consumer: Any, topic: str, partition: int) -> None:
    """Step 1 of a batch: the intent commit, before anything is written."""
    batch = PartitionBatch(topic, partition, first_offset=0, last_offset=0, payloads=[b"x"])
    queue = CommitQueue(
        lambda _: [Written(1, 0)], lambda offsets: commit(consumer, offsets), lambda *_: None
    )
    try:
        queue.write_now(batch)
    finally:
        queue.close()


def test_commit_to_a_partition_that_does_not_exist_stops_naming_it(
    topic_factory: Callable[..., str], consumer_of: Callable[..., Any]
) -> None:
    topic = topic_factory(partitions=1)

    with pytest.raises(
        CommitRefusedError, match=rf"partition 5 of {topic} \(UNKNOWN_TOPIC_OR_PART"
    ):
        step_one(consumer_of(), topic, partition=5)


def test_commit_by_a_member_the_group_dropped_is_retried_not_fatal(
    topic_factory: Callable[..., str], consumer_of: Callable[..., Any]
) -> None:
    from schemas.errors import ServiceUnavailableError

    topic = topic_factory(partitions=1)
    consumer = consumer_of(**{"max.poll.interval.ms": 6000, "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        assert time.monotonic() < deadline, "no assignment within 30 s"
        consumer.poll(0.2)
    time.sleep(8)  # no poll for longer than max.poll.interval.ms: the group drops the member

    with pytest.raises(ServiceUnavailableError, match="UNKNOWN_MEMBER_ID"):
        step_one(consumer, topic, partition=0)
