"""`cdfbridge-producer resync`: ask for a new generation of one table's topic, and wait
for the producer that follows the table to publish it (producer/resync/resync.py)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException, Producer

from producer import metrics
from schemas.errors import ConfigError, ServiceUnavailableError
from schemas.progress import Position
from services.kafka_errors import build, error_of
from services.progress_topic import Progress
from services.service_errors import client_failure
from services.settings import KafkaConfig

if TYPE_CHECKING:
    from producer.settings import ProducerSettings


def request(kafka_config: KafkaConfig, topic: str, wait_s: float) -> Position:
    """Ask for a new generation of topic (or join one asked for and not yet taken), then wait
    up to wait_s for its producer to publish the snapshot; returns the progress then."""
    progress = Progress(kafka_config, topic)
    position = progress.read()
    if position.version is None:
        raise ConfigError(
            f"nothing was published to {topic} yet, so there is nothing to resync: check the "
            "table or --topic; a producer's first start publishes the table (--snapshot for "
            "its state first)"
        )
    generation = position.requested if position.resync_pending else position.next_generation
    if not position.resync_pending:
        _send(kafka_config, progress, generation)
        position = replace(position, requested=generation)
    metrics.event("resync_asked", topic=topic, generation=generation)
    deadline = time.monotonic() + wait_s
    while position.generation.number < generation and time.monotonic() < deadline:
        time.sleep(1.0)
        position = progress.read()
    return position


def _send(kafka_config: KafkaConfig, progress: Progress, generation: int) -> None:
    failed: list[KafkaError] = []
    producer = build(
        Producer,
        {
            **kafka_config,
            "acks": "all",
            "allow.auto.create.topics": False,  # the progress topic is the producer's to make
            "on_delivery": lambda error, _: failed.extend([error] if error else []),
        },
    )
    where, doing = str(kafka_config.get("bootstrap.servers", "?")), f"writing to {progress.topic}"
    try:
        progress.request_resync(producer, generation)
        left = producer.flush(30)
    except KafkaException as exc:
        raise client_failure(error_of(exc), where, doing) from exc
    if failed:
        raise client_failure(failed[0], where, doing)
    if left:
        raise ServiceUnavailableError(f"Kafka at {where} did not take the resync request in 30 s")


def chosen_topic(settings: ProducerSettings, name: str | None) -> str:
    """The topic of the table `name` names (its table or its topic), or of the only table."""
    sources = settings.sources()
    if name is None and len(sources) == 1:
        return sources[0].topic_name
    found = [s.topic_name for s in sources if name in (s.table, s.topic_name)]
    if len(found) == 1:
        return found[0]
    listed = ", ".join(s.topic_name for s in sources)
    asked = "name the table to resync" if name is None else f"no table or topic {name!r}"
    raise ConfigError(f"{asked}: `resync TABLE_OR_TOPIC`, one of {listed}")


def describe(topic: str, position: Position) -> str:
    """What `cdfbridge-producer resync` prints."""
    generation = position.generation
    if generation.number < position.requested:
        return (
            f"{topic}: generation {position.requested} asked for; no producer has published "
            "its snapshot yet. A producer following the table takes it as it runs, or when "
            "it starts."
        )
    start = ", ".join(f"partition {p} at {o}" for p, o in sorted(generation.start.items()))
    return (
        f"{topic}: generation {generation.number} published, snapshot at version "
        f"{position.version}, starting at {start}.\nRebuild its ClickHouse table from "
        f"there: cdfbridge-consumer --topic {topic} rebuild"
    )
