"""Kafka clients as the consumer needs them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from schemas.errors import ServiceUnavailableError
from schemas.settings import MAX_MESSAGE_BYTES

# A dead letter is its message plus headers naming the error and where it came from.
DEAD_LETTER_HEADROOM = 64 * 1024


def consumer_config(
    client_config: Mapping[str, Any], group: str, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> dict[str, Any]:
    """Offsets are committed by hand, after ClickHouse has the rows; uncommitted
    transactions are never read; rebalances move only the partitions that change owner.
    A fetch always holds the largest message the producer may send."""
    fetch = max(64 * 1024 * 1024, max_message_bytes)
    return {
        # Prefetch whole batches' worth without pausing: librdkafka otherwise backs off for
        # a second whenever a partition's queue holds 100k messages. Settings may tune these
        # (CDFBRIDGE_KAFKA__PROPERTIES).
        "fetch.max.bytes": fetch,
        "receive.message.max.bytes": max(100_000_000, fetch + 2**20),
        # Smaller than a batch: a response is parsed whole before its first message is
        # handed over, so the first rows of a backlog arrive sooner.
        "max.partition.fetch.bytes": 2 * 1024 * 1024,
        "queued.min.messages": 1_000_000,
        "queued.max.messages.kbytes": 128 * 1024,  # per partition: the bound on prefetch memory
        "fetch.queue.backoff.ms": 0,
        "fetch.wait.max.ms": 100,  # an idle partition answers (and reports its end) sooner
        **client_config,
        # What the commit-after-insert guarantee rests on: never overridden.
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
        # The end of a partition cuts its batch early (consumer/batch.py) and tells
        # --until-caught-up when to stop.
        "enable.partition.eof": True,
    }


def ensure_topic(
    client_config: Mapping[str, Any],
    topic: str,
    partitions: int = 1,
    max_message_bytes: int = MAX_MESSAGE_BYTES + DEAD_LETTER_HEADROOM,
) -> None:
    """Create `topic` unless it exists (the dead-letter topic, on start-up)."""
    admin = AdminClient(dict(client_config))
    config = {"max.message.bytes": str(max_message_bytes)}
    future = admin.create_topics([NewTopic(topic, partitions, config=config)], request_timeout=30)[
        topic
    ]
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        if error.retriable():
            raise ServiceUnavailableError(f"cannot create topic {topic}: {error}") from exc
        raise
