"""The producer's topics: the data topic and its compacted `<topic>.progress`, created when
missing, and waited for until the cluster describes them."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from schemas.errors import TableConfigError
from schemas.naming import REPLAYABLE, progress_topic
from services.kafka_errors import error_of
from services.kafka_topics import admin_client, created, described
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
    whether it was missing, so that this start created it; and whether its progress topic
    was missing (progress_created: empty, or written since by another start only)."""

    id: str
    created: bool
    progress_created: bool = False


@dataclass(frozen=True)
class Wanted:
    """A table's data topic as created when missing: partitions, and topic_config
    (compacted by default: schemas/naming.py REPLAYABLE)."""

    topic: str
    partitions: int
    topic_config: Mapping[str, str] = field(default_factory=lambda: REPLAYABLE)

    def new_topics(self, max_message_bytes: int) -> list[NewTopic]:
        """The data topic, taking messages up to max_message_bytes, and its compacted
        progress topic."""
        config = {**self.topic_config, "max.message.bytes": str(max_message_bytes)}
        return [
            NewTopic(self.topic, self.partitions, -1, config=config),
            NewTopic(progress_topic(self.topic), 1, -1, config={"cleanup.policy": "compact"}),
        ]


def ensure_topics(
    kafka_config: KafkaConfig,
    topic: str,
    partitions: int,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    topic_config: Mapping[str, str] = REPLAYABLE,
) -> DataTopic:
    """One table's topics made when missing (ensure_all); its data topic as found."""
    wanted = Wanted(topic, partitions, topic_config)
    return ensure_all(kafka_config, [wanted], max_message_bytes)[topic]


def ensure_all(
    kafka_config: KafkaConfig, tables: list[Wanted], max_message_bytes: int = MAX_MESSAGE_BYTES
) -> dict[str, DataTopic]:
    """Create each table's data topic and progress topic when missing, in one request; the
    data topics as found. Existing topics are left as they are. They are described by name
    through the process's one admin client, in one request: a listing of every topic costs
    as much as the cluster has topics."""
    admin = admin_client(kafka_config)
    where = str(kafka_config.get("bootstrap.servers", "?"))
    wanted = [new for table in tables for new in table.new_topics(max_message_bytes)]
    names = [t.topic for t in wanted]
    try:
        known = described(admin, names)
        missing = [t for t in wanted if t.topic not in known]
        if missing:
            created(admin, missing)
            known = {**known, **_wait_until_described(admin, names, where)}
    except KafkaException as exc:
        error = error_of(exc)
        data_topics = ", ".join(repr(table.topic) for table in tables)
        if error.code() == KafkaError.TOPIC_EXCEPTION:  # Kafka's InvalidTopicException
            raise TableConfigError(
                f"Kafka refuses the topic name {data_topics}: {TOPIC_NAMES}"
            ) from exc
        raise client_failure(error, where, f"creating topic {data_topics}") from exc
    made = {t.topic for t in missing}
    return {
        t.topic: DataTopic(known[t.topic], t.topic in made, progress_topic(t.topic) in made)
        for t in tables
    }


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
