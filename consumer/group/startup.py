"""Start-up: join the group, and set up the table and the dead-letter topic meanwhile.

The group is joined first: librdkafka's threads do the join while this thread loads the
registry and ClickHouse clients, creates or checks the table and the dead-letter topic, so
start-up costs the longer of the two, not their sum. If those services make it wait (not
reachable yet, or the producer has not registered the topic's schemas yet), it leaves the
group meanwhile, so that no partition sits with a member that cannot write it, waits with
services.retry's back-off, and joins again once they answer. It leaves only once its join
has finished (`leave`), since a member closed in the middle of one stays in the group.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from threading import Event

from confluent_kafka import Consumer

from consumer.group.batch import TopicPartitionKey
from consumer.group.dlq import DeadLetters
from consumer.group.kafka import (
    DEAD_LETTER_HEADROOM,
    consumer_config,
    ensure_topic,
    partition_count,
    prefetch_kbytes,
)
from consumer.group.rebalance import Rebalance
from consumer.group.registry import Schemas
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


@dataclass(frozen=True)
class Started:
    consumer: Consumer  # subscribed
    writer: BatchWriter
    partitions: frozenset[TopicPartitionKey]  # all of the topic's, when asked for


def start(
    settings: ConsumerSettings,
    rebalance: Rebalance,
    stop: Event,
    list_partitions: bool = False,
    dead_letters: DeadLetters | None = None,
) -> Started | None:
    """A subscribed consumer and the writer of its table, which dead-letters through
    `dead_letters` (the process's), else a producer of its own; None if stopped while
    waiting."""
    consumer = subscribe(settings, rebalance)
    dead_letters = dead_letters or dead_letters_for(settings)
    try:
        writer = _writer(settings, dead_letters)
    except TransientError as exc:
        leave(consumer, rebalance, stop)  # no partition waits with a member that cannot write
        found = _wait_for_writer(settings, dead_letters, exc, stop)
        if found is None:
            return None
        writer, consumer = found, subscribe(settings, rebalance)
    except BaseException:
        leave(consumer, rebalance, stop)
        raise
    partitions = _partitions(consumer, settings.consumer.topic) if list_partitions else frozenset()
    return Started(consumer, writer, partitions)


def dead_letters_for(settings: ConsumerSettings) -> DeadLetters:
    """A dead-letter producer for the settings' Kafka, taking the largest message plus its
    headers."""
    largest = settings.kafka.max_message_bytes + DEAD_LETTER_HEADROOM
    return DeadLetters(settings.kafka.client_config(), largest)


def subscribe(settings: ConsumerSettings, rebalance: Rebalance) -> Consumer:
    """A member subscribed to the settings' topic, holding at most the topic's share of the
    process's prefetch memory (split among the partitions the topic has now)."""
    kafka, c = settings.kafka.client_config(), settings.consumer
    prefetch = prefetch_kbytes(c.prefetch_mb, partition_count(kafka, c.topic))
    config = consumer_config(kafka, c.group, settings.kafka.max_message_bytes, prefetch)
    consumer = build(Consumer, config)
    consumer.subscribe(
        [c.topic],
        on_assign=rebalance.on_assign,
        on_revoke=rebalance.on_revoke,
        on_lost=rebalance.on_lost,
    )
    return consumer


def leave(consumer: Consumer, rebalance: Rebalance, stop: Event) -> None:
    """Close a member that has not started reading, so that it leaves the group at once.

    Closed while its JoinGroup is still in flight, a member is added by the broker after its
    LeaveGroup was sent (or none could be), and keeps its place, and any partition handed to
    it, until its session times out (45 s by default). So the join is let finish first
    (poll serves it; nothing read is kept or committed), for at most JOIN_WAIT_S."""
    deadline = time.monotonic() + JOIN_WAIT_S
    while not rebalance.joined and not stop.is_set() and time.monotonic() < deadline:
        consumer.poll(0.1)
    consumer.close()


def _wait_for_writer(
    settings: ConsumerSettings, dead_letters: DeadLetters, cause: TransientError, stop: Event
) -> BatchWriter | None:
    """The writer, once the services answer (services.retry's back-off); None if stopped."""
    log.warning("waiting for services", extra={"error": str(cause)[:300]})
    wait = retrying("services", max_backoff_s=settings.consumer.max_backoff_seconds, stop=stop)
    try:
        return wait(_writer, settings, dead_letters)
    except Stopped:
        return None


def _writer(settings: ConsumerSettings, dead_letters: DeadLetters) -> BatchWriter:
    """The table created or checked, and the dead-letter topic too."""
    schemas = Schemas(settings.schema_registry.client_config())
    target = settings.target()
    writer = BatchWriter.create(settings, target, schemas, dead_letters)
    largest = settings.kafka.max_message_bytes + DEAD_LETTER_HEADROOM
    ensure_topic(settings.kafka.client_config(), dlq_topic(settings.consumer.topic), 1, largest)
    return writer


def _partitions(consumer: Consumer, topic: str) -> frozenset[TopicPartitionKey]:
    found = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    return frozenset((topic, p) for p in found)
