"""Topics created through the one helper both stages use (services/kafka_topics.py): a topic
already there is taken as made, and INVALID_REPLICATION_FACTOR, which a restarting KRaft
cluster answers while its brokers are fenced, is tried again for a while, then raised."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from services import kafka_topics
from services.kafka_topics import created, described
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = [pytest.mark.integration]


def test_a_topic_already_there_is_taken_as_made(endpoints: Endpoints) -> None:
    admin = AdminClient({"bootstrap.servers": endpoints.kafka})
    topic = unique("made")

    created(admin, [NewTopic(topic, 2)])
    created(admin, [NewTopic(topic, 2)])  # another process made it meanwhile

    assert topic in described(admin, [topic])


def test_a_replication_factor_the_cluster_cannot_meet_is_raised_after_its_attempts(
    endpoints: Endpoints, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(kafka_topics, "CREATE_ATTEMPTS", 2)
    admin = AdminClient({"bootstrap.servers": endpoints.kafka})
    topic = unique("unreplicable")

    with pytest.raises(KafkaException) as raised:
        created(admin, [NewTopic(topic, 1, replication_factor=2)])  # the stack has one broker

    assert raised.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
    waits = [r for r in caplog.records if r.name == "cdfbridge.retry"]
    assert len(waits) == 1 and f"Kafka to create ['{topic}']" in waits[0].getMessage()
    assert described(admin, [topic]) == {}
