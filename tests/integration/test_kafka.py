"""The broker is a real Kafka: topics, transactions, read_committed isolation."""

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def read_all(
    endpoints: Endpoints, topic: str, isolation: str, expected: int, timeout_s: float = 60
) -> list[bytes]:
    """Every value `isolation` sees in topic: once values arrive, until 5 polls come back
    empty or more than `expected` came; a topic that stays empty fails after timeout_s."""
    consumer = Consumer(
        {
            "bootstrap.servers": endpoints.kafka,
            "group.id": f"{topic}-{isolation}",
            "auto.offset.reset": "earliest",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        empty_polls = 0
        while empty_polls < 5 and len(values) <= expected:
            assert time.monotonic() < deadline, (
                f"{isolation} read {len(values)} of the {expected} values expected in {topic} "
                f"within {timeout_s:.0f} s; got {values}"
            )
            msg = consumer.poll(1.0)
            if msg is None:
                empty_polls += 1 if values else 0
                continue
            assert msg.error() is None, msg.error()
            values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


def test_admin_client_creates_topic_with_requested_partitions(
    kafka_admin: Any, topic_factory: Any
) -> None:
    topic = topic_factory(partitions=4)

    metadata = kafka_admin.list_topics(topic, timeout=10)

    assert len(metadata.topics[topic].partitions) == 4


def test_read_committed_sees_committed_transaction_and_not_aborted_one(
    endpoints: Endpoints, topic_factory: Any
) -> None:
    topic = topic_factory(partitions=1)
    producer = Producer({"bootstrap.servers": endpoints.kafka, "transactional.id": topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"committed")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)

    committed = read_all(endpoints, topic, "read_committed", expected=1)
    uncommitted = read_all(endpoints, topic, "read_uncommitted", expected=2)

    assert committed == [b"committed"]
    assert uncommitted == [b"committed", b"aborted"]
