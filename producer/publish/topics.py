"""The producer's topics: the data topic and its compacted `<topic>.progress`, created when
missing, and waited for until the cluster describes them."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from schemas.errors import TableConfigError
from schemas.naming import REPLAYABLE, progress_topic
from services.kafka_errors import error_of
from services.kafka_topics import created, described
from services.retry import retrying
from services.service_errors import KafkaUnavailableError, client_failure
from services.settings import MAX_MESSAGE_BYTES, KafkaConfig

TOPIC_NAMES = (
    "letters, digits, '.', '_' and '-', at most 249 characters; set --topic "
    "(CDFBRIDGE_SOURCE__TOPIC)"
)
# Topics just created are looked for again after 0.5 and 1 s, then every 2 s: about 30 s.
LIST_ATTEMPTS = 16


@dataclass(frozen=True)
class DataTopic:
    """A table's data topic: its Kafka id (another once deleted and created again), and
    whether it was missing, so that this start created it."""

    id: str
    created: bool


def ensure_topics(
    kafka_config: KafkaConfig,
    topic: str,
    partitions: int,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    topic_config: Mapping[str, str] = REPLAYABLE,
) -> DataTopic:
    """Create the data topic, taking messages up to max_message_bytes, with topic_config
    (compacted by default: schemas/naming.py REPLAYABLE), and the compacted progress topic,
    when missing; the data topic as found. Existing topics are left as they are. Both are
    described by name through the process's one admin client: a lake's start asks for each
    of its tables, and a listing of every topic costs as much as the cluster has topics."""
    admin = _admin(tuple(sorted(kafka_config.items())))
    where = str(kafka_config.get("bootstrap.servers", "?"))
    wanted = [
        NewTopic(
            topic,
            partitions,
            -1,
            config={
                **topic_config,
                "max.message.bytes": str(max_message_bytes),
            },
        ),
        NewTopic(progress_topic(topic), 1, -1, config={"cleanup.policy": "compact"}),
    ]
    try:
        names = [t.topic for t in wanted]
        known = described(admin, names)
        was_there = topic in known
        missing = [t for t in wanted if t.topic not in known]
        if missing:
            created(admin, missing)
            known = _wait_until_described(admin, names, where)
    except KafkaException as exc:
        error = error_of(exc)
        if error.code() == KafkaError.TOPIC_EXCEPTION:  # Kafka's InvalidTopicException
            raise TableConfigError(
                f"Kafka refuses the topic name {topic!r}: {TOPIC_NAMES}"
            ) from exc
        raise client_failure(error, where, f"creating topic {topic}") from exc
    return DataTopic(known[topic], created=not was_there)


@functools.lru_cache(maxsize=1)  # a process has one Kafka config; another replaces it
def _admin(config: tuple[tuple[str, str | int | float | bool], ...]) -> AdminClient:
    """The process's admin client for a Kafka config."""
    return AdminClient(dict(config))


def _wait_until_described(admin: AdminClient, topics: list[str], where: str) -> dict[str, str]:
    """described(admin, topics), once it holds them all."""
    began = time.monotonic()

    def all_described() -> dict[str, str]:
        known = described(admin, topics)
        if len(known) < len(topics):
            waited = f"not described after {time.monotonic() - began:.0f} s"
            raise KafkaUnavailableError(where, f"creating topics {topics}", waited)
        return known

    waiting = retrying(f"Kafka to describe {topics}", max_backoff_s=2.0, attempts=LIST_ATTEMPTS)
    return waiting(all_described)
