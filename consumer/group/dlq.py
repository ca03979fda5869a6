"""The dead-letter topic `<topic>.dlq`: poison messages, their key and value unchanged, with
headers naming the error, the source topic, partition and offset."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
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
FLUSH_STEP_S = 0.1  # a flush looks at its own letters' count this often


class DeadLetters:
    """The dead-letter producer of the process, made at the first dead letter: most topics
    never have one, and an idle librdkafka client still costs its threads and metadata
    requests. Every topic's pipeline may share it: a topic's flush waits for its own dead
    letters only, and raises only their failures, whichever thread served their delivery."""

    def __init__(self, client_config: Mapping[str, Any], max_message_bytes: int) -> None:
        self._config = {
            **client_config,
            "enable.idempotence": True,
            "linger.ms": 20,
            "message.max.bytes": max_message_bytes,
        }
        self._producer: Producer | None = None
        self._made = threading.Lock()
        self._counts = threading.Lock()  # sending and delivering threads both change these
        self._pending: Counter[str] = Counter()  # by source topic: not acknowledged yet
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
        with self._counts:  # after: a refused produce() is never waited for
            self._pending[source] += 1  # (a delivery counted down first nets the same)
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
        """Wait until every dead letter of `source` is acknowledged: offsets of dead-lettered
        messages are committed only after this returns. Raises their failures; another
        topic's letters that Kafka does not acknowledge do not hold it up."""
        if self._producer is None:
            return
        deadline = time.monotonic() + timeout_s
        try:
            while self._pending[source] and (wait := deadline - time.monotonic()) > 0:
                self._producer.flush(min(wait, FLUSH_STEP_S))  # sends now, serves deliveries
        except KafkaException as exc:
            raise ServiceUnavailableError(f"dead-letter producer failed: {exc}") from exc
        left = self._pending[source]
        with self._counts:
            failures = self._failures.pop(source, [])
        if failures:
            raise ServiceUnavailableError(f"dead letters not delivered: {failures[:3]}")
        if left:
            raise ServiceUnavailableError(
                f"{left} dead letters not acknowledged by Kafka within {timeout_s} s"
            )

    def _delivered(self, source: str, error: KafkaError | None, message: Message) -> None:
        """On the thread of whichever flush serves it: kept for `source`'s own flush."""
        with self._counts:
            self._pending[source] -= 1
            if error is not None:
                self._failures.setdefault(source, []).append(f"{message.topic()}: {error}")
