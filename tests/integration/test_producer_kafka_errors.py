"""Kafka's refusals reach the producer's user as errors that name them, never as raw
KafkaException tracebacks: a topic name Kafka refuses, a chunk the topic will not take
(too large for it, named with the topic's limit)."""

import os

import pyarrow as pa
import pytest

from producer.errors import MessageTooLargeError
from producer.publish.publish import Publisher
from producer.publish.topics import ensure_topics
from schemas.errors import ConfigError
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def test_a_topic_name_kafka_refuses_is_a_setting(endpoints: Endpoints) -> None:
    config: KafkaConfig = {"bootstrap.servers": endpoints.kafka}

    with pytest.raises(ConfigError, match=r"topic name 'orders v2!'.*CDFBRIDGE_SOURCE__TOPIC"):
        ensure_topics(config, "orders v2!", partitions=1)


def test_a_chunk_the_topic_refuses_aborts_and_names_kafkas_error(endpoints: Endpoints) -> None:
    topic = unique("tight")
    ensure_topics({"bootstrap.servers": endpoints.kafka}, topic, 1, max_message_bytes=1000)
    publisher = Publisher({"bootstrap.servers": endpoints.kafka}, topic)
    publisher.start()
    big = pa.RecordBatch.from_pydict(
        {"key": [b"k"], "value": [os.urandom(5000)], "_is_delete": [False]}
    )

    # Refused for its size by the topic: named with the topic's limit and how to raise it.
    limit = rf"does not fit topic {topic} .*version up to 1\).*max.message.bytes"
    with pytest.raises(MessageTooLargeError, match=limit):
        publisher.publish([big], last_version=1, stop=lambda: False)

    publisher.close()

    restarted = Publisher({"bootstrap.servers": endpoints.kafka}, topic)  # as the restart does
    assert restarted.start().version is None  # the refused chunk's progress was never committed
    small = pa.RecordBatch.from_pydict({"key": [b"k"], "value": [b"v"], "_is_delete": [False]})
    assert restarted.publish([small], last_version=1, stop=lambda: False) == 1
    restarted.close()


def test_a_full_local_queue_when_the_progress_record_is_queued_waits_and_commits(
    endpoints: Endpoints,
) -> None:
    """A chunk that fills librdkafka's queue to the end (tombstones make it fill faster):
    the progress record waits for room as the changes do, instead of aborting the chunk."""
    topic = unique("topic")
    ensure_topics({"bootstrap.servers": endpoints.kafka}, topic, partitions=1)
    tight: KafkaConfig = {
        "bootstrap.servers": endpoints.kafka,
        "queue.buffering.max.messages": 10,
    }
    publisher = Publisher(tight, topic, tombstones=True)
    publisher.start()
    deletes = pa.RecordBatch.from_pydict(
        {
            "key": [b"k%d" % n for n in range(500)],
            "value": [b"v"] * 500,
            "_is_delete": [True] * 500,
        }
    )

    assert publisher.publish([deletes], last_version=7, stop=lambda: False) == 500
    publisher.close()
    assert Publisher({"bootstrap.servers": endpoints.kafka}, topic).start().version == 7
