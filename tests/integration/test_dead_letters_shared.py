"""One dead-letter producer for every topic of the process (consumer/group/dlq.py), on a real
Kafka: each topic's letters reach its own `<topic>.dlq`, and a topic's flush raises only the
failures of its own letters, whichever flush served them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from consumer.group.dlq import DeadLetters
from schemas.errors import ServiceUnavailableError
from schemas.naming import dlq_topic
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def _read(kafka: dict[str, Any], topic: str, count: int) -> list[Message]:
    consumer = Consumer({**kafka, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    found: list[Message] = []
    for _ in range(60):
        found += [m for m in consumer.consume(count, timeout=0.5) if m.error() is None]
        if len(found) >= count:
            break
    consumer.close()
    return found


def test_each_topics_flush_raises_only_its_own_letters_failures(
    endpoints: Endpoints, topic_factory: Callable[..., str]
) -> None:
    kafka: dict[str, Any] = {"bootstrap.servers": endpoints.kafka}
    fits, too_big = topic_factory(1), topic_factory(1)
    admin = AdminClient(kafka)
    small = NewTopic(dlq_topic(too_big), 1, 1, config={"max.message.bytes": "1024"})
    wide = NewTopic(dlq_topic(fits), 1, 1)
    for future in admin.create_topics([small, wide]).values():
        future.result(timeout=30)
    source = Producer(kafka)
    for topic in (fits, too_big):
        source.produce(topic, b"v" * 4096, b"k")
    assert source.flush(30) == 0
    messages = {topic: _read(kafka, topic, 1)[0] for topic in (fits, too_big)}

    letters = DeadLetters(kafka, 1024 * 1024)
    letters.send(messages[too_big], "poison")
    letters.send(messages[fits], "poison")
    letters.flush(fits)  # serves both letters' deliveries: only its own count
    with pytest.raises(ServiceUnavailableError, match="dead letters not delivered"):
        letters.flush(too_big)
    letters.flush(too_big)  # raised once: nothing is left of it

    stored = _read(kafka, dlq_topic(fits), 1)
    assert [(m.key(), len(m.value() or b"")) for m in stored] == [(b"k", 4096)]
