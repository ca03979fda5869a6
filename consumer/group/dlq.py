"""The dead-letter topic `<topic>.dlq`: poison messages, their key and value unchanged, with
headers naming the error, the source topic, partition and offset."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from consumer.group.errors import PoisonMessageError
from schemas.errors import ServiceUnavailableError
from schemas.naming import dlq_topic
from services.kafka_errors import build

log = logging.getLogger(__name__)

ERROR = "cdfbridge.error"
SOURCE_TOPIC = "cdfbridge.source.topic"
SOURCE_PARTITION = "cdfbridge.source.partition"
SOURCE_OFFSET = "cdfbridge.source.offset"


class DeadLetters:
    """The dead-letter producer of the process, made at the first dead letter: most topics
    never have one, and an idle librdkafka client still costs its threads and metadata
    requests. Every topic's pipeline may share it: each flush waits for every dead letter
    sent, and raises only the failures of its own topic's."""

    def __init__(self, client_config: Mapping[str, Any], max_message_bytes: int) -> None:
        self._config = {
            **client_config,
            "enable.idempotence": True,
            "linger.ms": 20,
            "message.max.bytes": max_message_bytes,
        }
        self._producer: Producer | None = None
        self._made = threading.Lock()
        self._failures: dict[str, list[str]] = {}  # by source topic

    def _the_producer(self) -> Producer:
        with self._made:
            if self._producer is None:
                self._producer = build(Producer, self._config)
            return self._producer

    def send(self, message: Message, error: PoisonMessageError | str) -> None:
        source = str(message.topic())
        headers: list[tuple[str, str | bytes | None]] = [
            (ERROR, str(error).encode()),
            (SOURCE_TOPIC, source.encode()),
            (SOURCE_PARTITION, str(message.partition()).encode()),
            (SOURCE_OFFSET, str(message.offset()).encode()),
        ]
        topic = dlq_topic(source)
        self._the_producer().produce(
            topic,
            value=message.value(),
            key=message.key(),
            headers=headers,
            on_delivery=partial(self._delivered, source),
        )
        log.warning(
            "dead-lettered",
            extra={
                "topic": topic,
                "partition": message.partition(),
                "offset": message.offset(),
                "error": str(error)[:500],
            },
        )

    def flush(self, source: str, timeout_s: float = 30.0) -> None:
        """Wait until every dead letter is acknowledged: offsets of dead-lettered messages
        are committed only after this returns. Raises the failures of `source`'s letters."""
        if self._producer is None:
            return
        try:
            left = self._producer.flush(timeout_s)
        except KafkaException as exc:
            raise ServiceUnavailableError(f"dead-letter producer failed: {exc}") from exc
        failures = self._failures.pop(source, [])
        if failures:
            raise ServiceUnavailableError(f"dead letters not delivered: {failures[:3]}")
        if left:
            raise ServiceUnavailableError(
                f"{left} dead letters not acknowledged by Kafka within {timeout_s} s"
            )

    def _delivered(self, source: str, error: KafkaError | None, message: Message) -> None:
        """On the thread of whichever flush serves it: kept for `source`'s own flush."""
        if error is not None:
            self._failures.setdefault(source, []).append(f"{message.topic()}: {error}")
