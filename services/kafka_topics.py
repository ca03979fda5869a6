"""Topics looked up by name through the Admin API's DescribeTopics, never named in a
metadata request: a broker with auto.create.topics.enable (Kafka's default) answers that by
creating the topic, with the broker's partition count and retention."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic

from services.kafka_errors import error_of
from services.retry import retrying

TIMEOUT_S = 30
# Creations refused for the replication factor are tried again after 0.5 and 1 s, then every
# 2 s: about 30 s.
CREATE_ATTEMPTS = 16
# A topic not there, or just created and without leaders yet.
_NOT_YET = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE)


def admin_client(kafka_config: Mapping[str, Any]) -> AdminClient:
    """The process's admin client for a Kafka config, made once: librdkafka's clients are
    thread-safe, and each one made costs its threads and its connections to every broker."""
    return _admin(tuple(sorted(kafka_config.items())))


@functools.lru_cache(maxsize=8)  # a process has one Kafka config, a test run a few
def _admin(config: tuple[tuple[str, Any], ...]) -> AdminClient:
    return AdminClient(dict(config))


def described(admin: AdminClient, topics: list[str]) -> dict[str, str]:
    """Those of topics the cluster knows, with their partitions, each with its Kafka topic id
    (a topic deleted and created again has a new one); raises KafkaException for any other
    answer than "not there (yet)"."""
    found = {}
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=TIMEOUT_S)
    for name, future in futures.items():
        try:
            description = future.result(timeout=TIMEOUT_S)
            if description.partitions:
                found[name] = str(description.topic_id)
        except KafkaException as exc:
            if exc.args[0].code() not in _NOT_YET:
                raise
    return found


def created(admin: AdminClient, topics: list[NewTopic]) -> None:
    """Create topics; one already there (another process made it meanwhile) is taken as
    made. A KRaft cluster whose brokers are all still fenced, as one restarting is, refuses
    a creation with INVALID_REPLICATION_FACTOR, as does a cluster with fewer brokers than
    the factor: tried again for about 30 s, then raised (KafkaException)."""

    def create() -> None:
        futures = admin.create_topics(topics, request_timeout=TIMEOUT_S)
        for future in futures.values():
            try:
                future.result(timeout=TIMEOUT_S)
            except KafkaException as exc:
                if error_of(exc).code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise

    names = [topic.topic for topic in topics]
    waiting = retrying(
        f"Kafka to create {names}",
        max_backoff_s=2.0,
        attempts=CREATE_ATTEMPTS,
        retry_on=_unfenced_brokers_wanted,
    )
    waiting(create)


def _unfenced_brokers_wanted(exc: BaseException) -> bool:
    return (
        isinstance(exc, KafkaException)
        and error_of(exc).code() == KafkaError.INVALID_REPLICATION_FACTOR
    )
