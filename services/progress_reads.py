"""Many progress topics read to their ends by one reader: a lake's start reads every
table's progress in one pass instead of a consumer, its metadata and its fetches a table."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from services.progress_topic import (
    PROGRESS_PARTITION,
    READ_TIMEOUT_S,
    Reading,
    end_reader,
)
from services.service_errors import UnreachableError
from services.settings import KafkaConfig

BATCH = 10_000  # messages a poll returns at most


def read_together(kafka_config: KafkaConfig, readings: list[Reading]) -> None:
    """Read each reading's progress topic from its start to its end (read_committed, as
    Progress.read_owners), all by one consumer; the topics must exist. Raises
    UnreachableError after READ_TIMEOUT_S, and Kafka's failures as Progress does."""
    if not readings:
        return
    by_topic = {reading.progress.topic: reading for reading in readings}
    open_ = set(by_topic)
    doing = f"reading the progress of {len(by_topic)} tables"
    with end_reader(kafka_config, doing) as consumer:
        consumer.assign(
            [TopicPartition(t, PROGRESS_PARTITION, OFFSET_BEGINNING) for t in sorted(by_topic)]
        )
        deadline = time.monotonic() + READ_TIMEOUT_S
        while open_ and time.monotonic() < deadline:
            for message in consumer.consume(BATCH, 0.5):
                topic = message.topic()
                if topic not in by_topic and message.error() is not None:
                    raise KafkaException(message.error())  # the client's, not a topic's
                if topic in open_ and by_topic[topic].take(message):
                    open_.discard(topic)
    if open_:
        took = f"reading progress took over {READ_TIMEOUT_S:.0f} s"
        raise UnreachableError("Kafka", ", ".join(sorted(open_)[:3]), 1, took)
