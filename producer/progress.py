"""The last Delta version fully published, kept in Kafka itself.

A compacted topic `<topic>.progress` holds one record per data topic; the producer writes it
inside the transaction of the chunk it describes, so it is visible exactly when the chunk is.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from producer.errors import KafkaUnavailableError, UnreachableError
from producer.kafka_errors import error_of, kafka_failure
from schemas.errors import ConfigError
from schemas.naming import progress_topic
from schemas.settings import MAX_MESSAGE_BYTES, KafkaConfig

TOPIC_NAMES = (
    "letters, digits, '.', '_' and '-', at most 249 characters; set --topic "
    "(CDFBRIDGE_SOURCE__TOPIC)"
)


class Progress:
    def __init__(self, kafka_config: KafkaConfig, topic: str) -> None:
        self.kafka_config = kafka_config
        self.topic = progress_topic(topic)
        self.key = topic.encode()

    def record(self, producer: Any, version: int) -> None:
        """Queue the progress record in the producer's open transaction."""
        producer.produce(self.topic, json.dumps({"version": version}).encode(), self.key)

    def last_version(self, timeout_s: float = 60.0) -> int | None:
        """Read the topic to its end with read_committed; the last record for our key wins."""
        consumer = Consumer(
            {
                **self.kafka_config,
                "group.id": "cdfbridge-progress-reader",  # assign() only: never joins or commits
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                # The end is signalled, not compared with the high watermark: the last
                # offsets of a transactional topic are commit markers no poll returns.
                "enable.partition.eof": True,
            }
        )
        where = str(self.kafka_config.get("bootstrap.servers", "?"))
        try:
            return self._read(consumer, timeout_s)
        except KafkaException as exc:
            raise kafka_failure(error_of(exc), where, f"reading {self.topic}") from exc
        finally:
            consumer.close()

    def _read(self, consumer: Any, timeout_s: float) -> int | None:
        if not consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions:
            return None  # never published anything
        consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        last: int | None = None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return last
                raise KafkaException(error)
            if message.key() == self.key:
                last = int(json.loads(message.value() or b"{}")["version"])
        raise UnreachableError("Kafka", self.topic, 1, f"reading progress took over {timeout_s} s")


def ensure_topics(
    kafka_config: KafkaConfig,
    topic: str,
    partitions: int,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> None:
    """Create the data topic, taking messages up to max_message_bytes, and the compacted
    progress topic, when missing. Existing topics are left as they are."""
    admin = AdminClient(kafka_config)
    where = str(kafka_config.get("bootstrap.servers", "?"))
    wanted = [
        NewTopic(topic, partitions, -1, config={"max.message.bytes": str(max_message_bytes)}),
        NewTopic(progress_topic(topic), 1, -1, config={"cleanup.policy": "compact"}),
    ]
    try:
        existing = admin.list_topics(timeout=30).topics
        missing = [t for t in wanted if t.topic not in existing]
        for name, future in admin.create_topics(missing).items() if missing else ():
            _created(future, name)
        _wait_until_listed(admin, [t.topic for t in wanted], where)
    except KafkaException as exc:
        error = error_of(exc)
        if error.code() == KafkaError.TOPIC_EXCEPTION:  # Kafka's InvalidTopicException
            raise ConfigError(f"Kafka refuses the topic name {topic!r}: {TOPIC_NAMES}") from exc
        raise kafka_failure(error, where, f"creating topic {topic}") from exc


def _created(future: Any, name: str) -> None:
    try:
        future.result(timeout=30)
    except KafkaException as exc:  # another producer may have created it meanwhile
        if error_of(exc).code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def _wait_until_listed(
    admin: AdminClient, topics: list[str], where: str, timeout_s: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listed = admin.list_topics(timeout=10).topics
        if all(t in listed and listed[t].partitions for t in topics):
            return
        time.sleep(0.2)
    raise KafkaUnavailableError(
        where, f"creating topics {topics}", f"not listed after {timeout_s} s"
    )
