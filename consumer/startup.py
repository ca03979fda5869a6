"""Start-up: join the group, and set up the table and the dead-letter topic meanwhile.

The group is joined first: librdkafka's threads do the join while this thread loads the
registry and ClickHouse clients, creates or checks the table and the dead-letter topic, so
start-up costs the longer of the two, not their sum. If those services make it wait (not
reachable yet, or the producer has not registered the topic's schemas yet), it leaves the
group meanwhile, so that no partition sits with a member that cannot write it, waits with
schemas.retry's back-off, and joins again once they answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from threading import Event

from confluent_kafka import Consumer

from consumer.batch import TopicPartitionKey
from consumer.dlq import DeadLetters
from consumer.kafka import DEAD_LETTER_HEADROOM, consumer_config, ensure_topic
from consumer.rebalance import Rebalance
from consumer.registry import Schemas
from consumer.settings import ConsumerSettings
from consumer.writer import BatchWriter
from schemas.errors import TransientError
from schemas.kafka_errors import build
from schemas.naming import dlq_topic
from schemas.retry import Stopped, retrying
from schemas.target import Target

log = logging.getLogger(__name__)
TIMEOUT_S = 30


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
) -> Started | None:
    """A subscribed consumer and the writer of its table; None if stopped while waiting."""
    consumer = subscribe(settings, rebalance)
    kafka = settings.kafka.client_config()
    dead_letters = DeadLetters(kafka, settings.kafka.max_message_bytes + DEAD_LETTER_HEADROOM)
    try:
        writer = _writer(settings, dead_letters)
    except TransientError as exc:
        consumer.close()  # no partition waits with a member that cannot write it
        found = _wait_for_writer(settings, dead_letters, exc, stop)
        if found is None:
            return None
        writer, consumer = found, subscribe(settings, rebalance)
    except BaseException:
        consumer.close()
        raise
    partitions = _partitions(consumer, settings.consumer.topic) if list_partitions else frozenset()
    return Started(consumer, writer, partitions)


def subscribe(settings: ConsumerSettings, rebalance: Rebalance) -> Consumer:
    kafka, group = settings.kafka.client_config(), settings.consumer.group
    consumer = build(Consumer, consumer_config(kafka, group, settings.kafka.max_message_bytes))
    consumer.subscribe(
        [settings.consumer.topic],
        on_assign=rebalance.on_assign,
        on_revoke=rebalance.on_revoke,
        on_lost=rebalance.on_lost,
    )
    return consumer


def _wait_for_writer(
    settings: ConsumerSettings, dead_letters: DeadLetters, cause: TransientError, stop: Event
) -> BatchWriter | None:
    """The writer, once the services answer (schemas.retry's back-off); None if stopped."""
    log.warning("waiting for services", extra={"error": str(cause)[:300]})
    wait = retrying("services", max_backoff_s=settings.consumer.max_backoff_seconds, stop=stop)
    try:
        return wait(_writer, settings, dead_letters)
    except Stopped:
        return None


def _writer(settings: ConsumerSettings, dead_letters: DeadLetters) -> BatchWriter:
    """The table created or checked, and the dead-letter topic too."""
    schemas = Schemas(settings.schema_registry.client_config())
    target = Target(settings.clickhouse.database, settings.consumer.target_table)
    writer = BatchWriter.create(settings, target, schemas, dead_letters)
    largest = settings.kafka.max_message_bytes + DEAD_LETTER_HEADROOM
    ensure_topic(settings.kafka.client_config(), dlq_topic(settings.consumer.topic), 1, largest)
    return writer


def _partitions(consumer: Consumer, topic: str) -> frozenset[TopicPartitionKey]:
    found = consumer.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    return frozenset((topic, p) for p in found)
