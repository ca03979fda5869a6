"""The last Delta version fully published, kept in Kafka itself.

A compacted topic `<topic>.progress` holds one record per data topic; the producer writes it
inside the transaction of the chunk it describes, so it is visible exactly when the chunk is.
The producer reads it to resume, and cdfbridge-verify to know which version to compare.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from schemas.kafka_errors import error_of
from schemas.naming import progress_topic
from schemas.service_errors import UnreachableError, client_failure
from schemas.settings import KafkaConfig

READ_TIMEOUT_S = 60.0  # to read the progress topic to its end


class Progress:
    def __init__(self, kafka_config: KafkaConfig, topic: str) -> None:
        self.kafka_config = kafka_config
        self.topic = progress_topic(topic)
        self.key = topic.encode()

    def record(self, producer: Any, version: int) -> None:
        """Queue the progress record in the producer's open transaction."""
        producer.produce(self.topic, json.dumps({"version": version}).encode(), self.key)

    def last_version(self) -> int | None:
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
            return self._read(consumer)
        except KafkaException as exc:
            raise client_failure(error_of(exc), where, f"reading {self.topic}") from exc
        finally:
            consumer.close()

    def _read(self, consumer: Any) -> int | None:
        if not consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions:
            return None  # never published anything
        consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        last: int | None = None
        deadline = time.monotonic() + READ_TIMEOUT_S
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
        took = f"reading progress took over {READ_TIMEOUT_S:.0f} s"
        raise UnreachableError("Kafka", self.topic, 1, took)
