"""Kafka-engine objects brought to the topic's latest value schema (`kafka-engine-ddl --apply`
where they exist already).

A Kafka table's columns are fixed when it is made, so the columns of a newer schema would
never get a value on that path. Its comment names the value schema it was made from and the
group it reads with; when the topic's latest schema is newer, apply:

1. drops the two materialized views: the Kafka table reads only while a view reads it, and
   what it read is inserted, then committed;
2. reads where its group stands, and gives a new group, `<group>-<schema id>`, the offsets
   to read from: in each partition, the first message written with a newer schema than the
   table's, if the old group read past one (a partition's schema ids only grow within a
   generation, so the offsets before the committed one are bisected), else where the old
   group stands; a partition the old group has not committed in yet is read from the
   generation's start, whose first message apply checks first
   (consumer/kafka_engine/late.py);
3. records the new group in the target table's mark (consumer/tables/generation.py);
4. drops the Kafka table;
5. lets apply create the Kafka table, reading with the new group, and the views again.

Killed before step 4, the next apply finds the old Kafka table and evolves again, to the
same offsets: the old group has not moved since step 1. Killed after it, the next apply
finds no Kafka table and reads on with the group step 3 recorded (`recorded_group`), whose
offsets step 2 set: the old group stands past messages the table holds without their newer
columns, and reading on with it would leave them so.

A new group, because a dropped Kafka table's member can stay in its old group for minutes
and hold a rebalance there. The messages read again carry the versions they had; of rows
with equal versions, a ReplacingMergeTree keeps the one inserted last, so the rows read
again, now with every column, replace those read without them: nothing is lost or doubled
in the resolved table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from consumer.kafka_engine.ddl import errors_pump, pump
from consumer.kafka_engine.new_group import reset_new, starts
from consumer.tables.generation import record_engine_group
from consumer.tables.placement import Placement
from schemas.target import Target
from services import faults
from services.table_marks import Built, Mark, built_from, queue

log = logging.getLogger(__name__)


def evolve(
    placement: Placement,
    kafka: Mapping[str, Any],
    target: Target,
    topic: str,
    group: str,
    latest: int,
    begin: Mapping[int, int],
) -> str:
    """Steps 1-4 when the target's Kafka table was made from an older schema than latest
    (on every server that holds one); returns the group the Kafka table is to read with.
    begin: where the topic's current generation starts, by partition."""
    built = built_from(placement.client, target)
    if built is None or built.schema_id >= latest:
        return built.group if built is not None and built.group else group
    for view in (pump(target), errors_pump(target)):  # 1.
        placement.drop("VIEW", view.name)
    new = f"{group}-{latest}"
    start = starts(kafka, built.group or group, topic, built.schema_id, begin)  # 2.
    made = Built(latest, new)  # by another apply meanwhile, whose engine holds the group
    if start and not reset_new(
        kafka, new, start, lambda: built_from(placement.client, target) == made
    ):
        return new  # that apply did steps 2-4: dropping its Kafka table would stall the group
    record_engine_group(placement, target, new)  # 3.
    faults.reach("kafka_engine_evolve.recorded")
    placement.drop("TABLE", queue(target).name)  # 4.
    faults.reach("kafka_engine_evolve.dropped")
    if not built.schema_id:
        log.warning(
            "Kafka table made by an earlier release, from a schema it did not name: made again "
            "from the latest; rows it read without the newer columns stay so until a rebuild",
            extra={"table": queue(target).name},
        )
    log.info(
        "Kafka table brought to a newer schema",
        extra={"table": queue(target).name, "from": built.schema_id, "to": latest, "group": new},
    )
    return new


def recorded_group(mark: Mark, group: str) -> str | None:
    """The group step 3 recorded in a target's mark for its Kafka engine, one of group's
    (`<group>-<id>`); None when there is none."""
    found = mark.engine_group
    return found if found.startswith(f"{group}-") else None
