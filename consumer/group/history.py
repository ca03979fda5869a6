"""Whether a topic still holds the history a reader needs, and where a new group starts.

A reader without committed offsets needs every offset from its generation's start
(schemas/progress.py; the topic's beginning for generation 0); one with offsets needs every
offset from them. Retention that has deleted any of those (the partition's low watermark
is past them) would make Kafka move the reader on to what is left, silently: the table
would miss changes. So a rebuild, a new group and the Kafka engine's DDL check first, and
refuse, or bootstrap from the lake (consumer/rebuild/bootstrap.py), instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource, ResourceType

from schemas.errors import TerminalError
from schemas.progress import Generation
from services.group_positions import PartitionOffsets
from services.kafka_errors import error_of
from services.kafka_topics import admin_client
from services.offsets import positions
from services.service_errors import client_failure

TIMEOUT_S = 30
BOOTSTRAP_HINT = (
    "load the table from the Delta table instead: cdfbridge-consumer rebuild --from-lake "
    "(bootstrap, for a new group)"
)


class HistoryGoneError(TerminalError):
    """The topic no longer holds offsets a reader needs; the message names them and the lake
    bootstrap."""


@dataclass(frozen=True)
class Gap:
    partition: int
    needed: int  # the first offset the reader needs
    low: int  # the first offset the partition still holds

    def __str__(self) -> str:
        return f"partition {self.partition} needs offset {self.needed}, holds {self.low} on"


def needed(found: PartitionOffsets, generation: Generation) -> int:
    """The first offset a reader of the partition needs: its committed one, else the start of
    the topic's current generation."""
    if found.committed >= 0:
        return found.committed
    return generation.start.get(found.partition, 0)


def gaps(found: list[PartitionOffsets], generation: Generation) -> list[Gap]:
    """The partitions whose low watermark is past the offset their reader needs."""
    return [
        Gap(p.partition, needed(p, generation), p.low)
        for p in found
        if p.low > needed(p, generation)
    ]


def group_gaps(
    kafka_config: Mapping[str, Any], group: str, topic: str, generation: Generation
) -> tuple[list[PartitionOffsets], list[Gap]]:
    """(the group's positions, the gaps in what it needs)."""
    found = positions(kafka_config, group, topic)
    return found, gaps(found, generation)


def refusal(topic: str, reader: str, missing: list[Gap]) -> HistoryGoneError:
    return HistoryGoneError(
        f"topic {topic} no longer holds the history {reader} needs (retention deleted it: "
        f"{'; '.join(map(str, missing))}); a replay would leave the table incomplete. "
        f"{BOOTSTRAP_HINT[0].upper()}{BOOTSTRAP_HINT[1:]}"
    )


def retention(kafka_config: Mapping[str, Any], topic: str) -> str | None:
    """What deletes the topic's history, as a sentence, or None when it keeps it: compacted,
    or deleting after no time and no size."""
    admin = admin_client(kafka_config)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        config = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)
    except KafkaException as exc:
        where = str(kafka_config.get("bootstrap.servers", "?"))
        raise client_failure(error_of(exc), where, f"reading the settings of {topic}") from exc
    value = {name: entry.value for name, entry in config.items()}
    if "delete" not in str(value.get("cleanup.policy", "delete")):
        return None
    limits = []
    if str(value.get("retention.ms", "-1")) != "-1":
        limits.append(f"retention.ms={value['retention.ms']}")
    if str(value.get("retention.bytes", "-1")) != "-1":
        limits.append(f"retention.bytes={value['retention.bytes']}")
    if not limits:
        return None
    return (
        f"{' and '.join(limits)} deletes history a rebuild or a new subscriber needs; keep "
        f"it with cleanup.policy=compact (kafka-configs.sh --alter --entity-type topics "
        f"--entity-name {topic} --add-config cleanup.policy=compact), or {BOOTSTRAP_HINT}"
    )
