"""The topics a command acts on, each with its own settings: those listed (consumer/settings.py),
and those consumer.topic_pattern matches among the brokers' topics when the command starts.

A pattern must match the whole name. Side topics (`<topic>.progress`, `<topic>.dlq`) and
Kafka's internal ones (`__consumer_offsets` ...) are never matched; a topic created later is
read from the next start on.
"""

from __future__ import annotations

import logging
import re

from confluent_kafka import KafkaException

from consumer.settings import ConsumerSettings
from schemas.errors import ConfigError, ServiceUnavailableError
from schemas.naming import dlq_topic, progress_topic
from services.kafka_topics import admin_client

log = logging.getLogger(__name__)
TIMEOUT_S = 30
SIDE_SUFFIXES = (dlq_topic(""), progress_topic(""))  # ".dlq", ".progress"
KAFKA_INTERNAL = "__"


def resolve(settings: ConsumerSettings) -> list[ConsumerSettings]:
    """One settings per topic, in order: the listed ones, then the pattern's (sorted), each
    with its share of the process's prefetch memory."""
    chosen = settings.listed()
    if settings.by_pattern:
        pattern = settings.consumer.topic_pattern
        found = matching(pattern, broker_topics(settings))
        chosen += [topic for topic in found if topic not in chosen]
        if not chosen:
            raise ConfigError(
                f"consumer.topic_pattern {pattern!r} matches no topic on "
                f"{settings.kafka.bootstrap_servers}: check the pattern (it must match the "
                "whole name), or start the producer first"
            )
        log.info("topics", extra={"pattern": pattern, "topics": chosen})
    resolved = [settings.for_topic(topic, len(chosen)) for topic in chosen]
    one_topic_per_table(resolved)
    return resolved


def one_topic_per_table(chosen: list[ConsumerSettings]) -> None:
    """ConfigError when two topics would write one table: each would take the other's rows
    for its own, and a key in both would flip between them."""
    topics: dict[str, list[str]] = {}
    for one in chosen:
        topics.setdefault(one.consumer.target_table, []).append(one.consumer.topic)
    shared = [
        f"{' and '.join(names)} into {table}" for table, names in topics.items() if len(names) > 1
    ]
    if shared:
        raise ConfigError(
            f"two topics would write one ClickHouse table: {'; '.join(shared)}. Give each "
            "topic a table of its own: the [[tables]] entry's `target`, or consumer.table "
            "(--table) when one topic is read"
        )


def matching(pattern: str, topics: set[str]) -> list[str]:
    """The topics the pattern matches in full, side topics and Kafka's own left out."""
    return sorted(
        topic
        for topic in topics
        if re.fullmatch(pattern, topic)
        and not topic.endswith(SIDE_SUFFIXES)
        and not topic.startswith(KAFKA_INTERNAL)
    )


def broker_topics(settings: ConsumerSettings) -> set[str]:
    admin = admin_client(settings.kafka.client_config())
    try:
        return set(admin.list_topics(timeout=TIMEOUT_S).topics)
    except KafkaException as exc:
        raise ServiceUnavailableError(
            f"cannot list the topics of {settings.kafka.bootstrap_servers}: {exc.args[0]}"
        ) from exc
