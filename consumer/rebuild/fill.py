"""Step 2 of a rebuild (consumer/rebuild/steps.py): where a fresh group starts filling the shadow
table, from the topic or from the lake.

- From the topic: the start of its current generation, while the topic still holds every
  offset from there (consumer/group/history.py).
- From the lake: ClickHouse loads the Delta table at the last version published
  (consumer/rebuild/bootstrap.py), and the group starts where the changes after it begin.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Literal

from consumer.group import history
from consumer.group.registry import Schemas
from consumer.group.startup import dead_letters_for
from consumer.group.writer import BatchWriter
from consumer.rebuild import bootstrap
from consumer.settings import ConsumerSettings
from schemas.target import Target
from services import lake, offsets
from services.clickhouse_client import connect
from services.progress_topic import Progress

log = logging.getLogger(__name__)
# topic: replay the topic; lake: bootstrap from the lake; auto: the topic while it holds
# the whole generation, else the lake.
Source = Literal["auto", "topic", "lake"]


@dataclass(frozen=True)
class Filled:
    generation: int  # the topic's generation the table holds
    source: str  # "topic" or "lake"
    version: int | None = None  # the Delta version loaded from the lake


def fill(settings: ConsumerSettings, into: Target, group: str, source: Source) -> Filled:
    """Set `group` (fresh) to start filling `into`; from the lake, load `into` first."""
    kafka, topic = settings.kafka.client_config(), settings.consumer.topic
    if source != "lake":
        generation = Progress(kafka, topic).read().generation
        _, missing = history.group_gaps(kafka, group, topic, generation)
        if not missing:
            if generation.start:
                offsets.reset(kafka, group, offsets.at(topic, generation.start))
            return Filled(generation.number, "topic")
        if source == "topic":
            raise history.refusal(topic, "a rebuild", missing)
        log.warning(
            "the topic's history is gone: loading the table from the lake",
            extra={"topic": topic, "gaps": ", ".join(map(str, missing))},
        )
    return from_lake(settings, into, group)


def from_lake(settings: ConsumerSettings, into: Target, group: str) -> Filled:
    kafka, topic = settings.kafka.client_config(), settings.consumer.topic
    asked = time.monotonic()
    point = bootstrap.start_point(kafka, topic)
    location = settings.consumer.lake_location or point.location
    if location is None or point.hashed is None:
        raise lake.LakeUnreadableError(
            f"the progress of topic {topic} does not name its Delta table and hashed columns "
            "yet: restart its producer with this release, which records them with its next "
            "version, or set consumer.lake_location; or replay the topic: "
            "cdfbridge-consumer rebuild --from-topic"
        )
    table = lake.locate(location, settings.storage)
    began = time.monotonic()
    create(settings, into)
    created = time.monotonic()
    bootstrap.load(connect(settings.clickhouse), into, table, point, set(point.hashed))
    loaded = time.monotonic()
    offsets.reset(kafka, group, offsets.at(topic, point.offsets))
    log.info(
        "filled from the lake",
        extra={
            "topic": topic,
            "start_point_s": round(began - asked, 2),
            "create_s": round(created - began, 2),
            "load_s": round(loaded - created, 2),
            "offsets_s": round(time.monotonic() - loaded, 2),
        },
    )
    return Filled(point.generation.number, "lake", point.version)


def create(settings: ConsumerSettings, into: Target) -> None:
    """The table, made from the topic's latest value schema as the consumer makes it."""
    section = settings.consumer.model_copy(update={"table": into.table})
    each = settings.model_copy(update={"consumer": section})
    schemas = Schemas(settings.schema_registry.client_config())
    BatchWriter.create(each, into, schemas, dead_letters_for(settings))
