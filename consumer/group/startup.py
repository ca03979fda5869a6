"""Start-up: a topic's table and dead-letter topic set up before it joins the member, and the
member's consumer, made for the group and closed only once its join has finished.

A topic waits for its services (not reachable yet, or the producer has not registered the
topic's schemas yet) outside the group, with services.retry's back-off, so that no
partition sits with a member that cannot write it. The member leaves only once its join has
finished (`leave`), since a member closed in the middle of one stays in the group.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from threading import Event

from confluent_kafka import Consumer

from consumer.group.batch import TopicPartitionKey
from consumer.group.dlq import DeadLetters
from consumer.group.errors import NotPublishedYetError
from consumer.group.kafka import (
    ASSUMED_PARTITIONS,
    DEAD_LETTER_HEADROOM,
    consumer_config,
    ensure_topic,
    partition_counts,
    prefetch_kbytes,
)
from consumer.group.registry import Schemas
from consumer.group.unpublished import UNPUBLISHED
from consumer.group.writer import BatchWriter
from consumer.settings import ConsumerSettings
from schemas.errors import TransientError
from schemas.naming import dlq_topic
from services.kafka_errors import build
from services.retry import Stopped, retrying

log = logging.getLogger(__name__)
TIMEOUT_S = 30
# How long a member about to leave may wait for its join to finish: a broker delays a new
# group's first join by group.initial.rebalance.delay.ms (3 s by default).
JOIN_WAIT_S = 10


def dead_letters_for(settings: ConsumerSettings) -> DeadLetters:
    """A dead-letter producer for the settings' Kafka, taking the largest message plus its
    headers."""
    largest = settings.kafka.max_message_bytes + DEAD_LETTER_HEADROOM
    return DeadLetters(settings.kafka.client_config(), largest)


def prefetch_of(each: Sequence[ConsumerSettings]) -> int:
    """queued.max.messages.kbytes of a member reading the topics of `each`: their shares of
    the prefetch memory, split among the partitions they have now."""
    kafka = each[0].kafka.client_config()
    share = sum(s.consumer.prefetch_mb for s in each)
    counts = partition_counts(kafka, [s.consumer.topic for s in each])
    return prefetch_kbytes(share, sum(n or ASSUMED_PARTITIONS for n in counts))


def member_consumer(settings: ConsumerSettings, prefetch_kb: int) -> Consumer:
    """The group member's consumer (not subscribed yet)."""
    config = consumer_config(
        settings.kafka.client_config(),
        settings.consumer.group,
        settings.kafka.max_message_bytes,
        prefetch_kb,
    )
    return build(Consumer, config)


def leave(consumer: Consumer, joined: Callable[[], bool], stop: Event) -> None:
    """Close a member, so that it leaves the group at once.

    Closed while its JoinGroup is still in flight, a member is added by the broker after its
    LeaveGroup was sent (or none could be), and keeps its place, and any partition handed to
    it, until its session times out (45 s by default). So the join is let finish first
    (poll serves it; nothing read is kept or committed), for at most JOIN_WAIT_S."""
    deadline = time.monotonic() + JOIN_WAIT_S
    while not joined() and not stop.is_set() and time.monotonic() < deadline:
        consumer.poll(0.1)
    consumer.close()


def open_writer(
    settings: ConsumerSettings, dead_letters: DeadLetters, stop: Event
) -> BatchWriter | None:
    """The topic's writer, once its services answer (services.retry's back-off); None if
    stopped while waiting."""
    try:
        return _writer(settings, dead_letters)
    except TransientError as exc:
        log.warning("waiting for services", extra={"error": str(exc)[:300]})
    wait = retrying("services", max_backoff_s=settings.consumer.max_backoff_seconds, stop=stop)
    try:
        with UNPUBLISHED.waiting():
            return wait(_writer, settings, dead_letters)
    except Stopped:
        return None


def _writer(settings: ConsumerSettings, dead_letters: DeadLetters) -> BatchWriter:
    """The table created or checked, and the dead-letter topic too."""
    schemas = Schemas(settings.schema_registry.client_config())
    # Not published yet (NotPublishedYetError): found by one request to the registry, before
    # any client of ClickHouse or Kafka is made for an attempt that would fail anyway.
    try:
        schemas.latest_value(settings.consumer.topic)
    except NotPublishedYetError as exc:
        exc.poll_s = UNPUBLISHED.poll_s()  # the process's waiting tables' looks spaced
        raise
    target = settings.target()
    writer = BatchWriter.create(settings, target, schemas, dead_letters)
    largest = settings.kafka.max_message_bytes + DEAD_LETTER_HEADROOM
    ensure_topic(settings.kafka.client_config(), dlq_topic(settings.consumer.topic), 1, largest)
    return writer


def partitions_of(consumer: Consumer, topic: str) -> frozenset[TopicPartitionKey]:
    """All of the topic's partitions now (--until-caught-up waits for each)."""
    found = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    return frozenset((topic, p) for p in found)
