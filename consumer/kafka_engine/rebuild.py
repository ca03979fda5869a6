"""`rebuild = "auto"` for a table ClickHouse's Kafka engine fills: `kafka-engine-ddl --apply`
rebuilds it when its topic has a newer generation than the table holds, and applies the
engine's DDL again over the rebuilt table.

No cdfbridge process runs beside the Kafka engine, so the apply is where a new generation
is met (run it after a resync, or on a schedule). When the table is behind:
1. drop the engine's two materialized views, then its Kafka table, on every server that
   has them (on a cluster, each server's engine): it stops reading;
2. rebuild the table by a group of its own (consumer/rebuild/steps.py: from the lake where
   ClickHouse reads the Delta table, else from the topic);
3. give a new engine group, `<group>-g<generation>`, the offsets that rebuild ended at (a
   new one, as consumer/kafka_engine/evolve.py does: the dropped table's member may stay in
   the old group for minutes);
4. let apply create the Kafka table with that group, and its views, again.

An apply killed between steps 1 and 4 leaves the table without its Kafka table. When it
was killed after the swap of step 2, the table is no longer behind, but the engine must not
read on with the old group, which may lag in the older generation: the next apply gives
the engine the generation's group, set (if new) to where the table's rows reach, as its
generation mark records them (consumer/tables/generation.py), and step 4 follows.
"""

from __future__ import annotations

import logging

from consumer.kafka_engine.ddl import errors_pump, pump
from consumer.kafka_engine.evolve import recorded_group
from consumer.rebuild.auto_rebuild import behind, rebuilt
from consumer.rebuild.steps import builder_group
from consumer.settings import ConsumerSettings
from consumer.tables.placement import Placement
from schemas.target import Target
from services import faults, offsets
from services.clickhouse_client import existing_columns
from services.progress_topic import Progress
from services.table_marks import built_from, marked, queue

log = logging.getLogger(__name__)


def rebuilt_group(
    placement: Placement, settings: ConsumerSettings, target: Target, group: str
) -> str | None:
    """Steps 1-3 when the setting asks and the table is behind; the group the Kafka table is
    to read with after them, else None."""
    if settings.consumer.rebuild != "auto" or existing_columns(placement.client, target) is None:
        return None  # a new table: apply makes it, and its group starts at the generation
    each = settings.model_copy(
        update={"consumer": settings.consumer.model_copy(update={"table": target.table})}
    )
    if not behind(each):
        return _resumed(placement, settings, target, group)
    for view in (pump(target), errors_pump(target)):  # 1.
        placement.drop("VIEW", view.name)
    placement.drop("TABLE", queue(target).name)
    kafka, topic = settings.kafka.client_config(), settings.consumer.topic
    generation = Progress(kafka, topic).read().generation.number
    ended = rebuilt(each, builder_group(group, "rebuild"))  # 2.
    faults.reach("kafka_engine_rebuild.rebuilt")
    new = f"{group}-g{generation}"
    offsets.reset(kafka, new, offsets.at(topic, ended))  # 3.
    log.info(
        "rebuilt for a new generation; the Kafka table reads on with a new group",
        extra={"table": target.name, "generation": generation, "group": new},
    )
    return new


def _resumed(
    placement: Placement, settings: ConsumerSettings, target: Target, group: str
) -> str | None:
    """A rebuilt table whose Kafka table is missing: the generation's group, set where the
    rows reach when it has no offsets; None for generation 0, an engine in place, or a group
    an evolve recorded after the rebuild."""
    found = marked(placement.client, target)
    if not found.generation or built_from(placement.client, target) is not None:
        return None
    if recorded_group(found, group) is not None:
        return None  # an evolve since the rebuild recorded its group: apply reads on with it
    kafka, topic = settings.kafka.client_config(), settings.consumer.topic
    new = f"{group}-g{found.generation}"
    if found.start and not offsets.committed(kafka, new, topic):
        offsets.reset(kafka, new, offsets.at(topic, found.start))
    log.warning(
        "the table was rebuilt but has no Kafka table: the engine reads with the generation's "
        "group from where the rows reach",
        extra={"table": target.name, "group": new},
    )
    return new
