"""Which generation of its topic (schemas/progress.py) a ClickHouse table holds: a rebuild
records it in the comment of the table that stores the rows (on a cluster, each shard's
local table, which a rebuild's EXCHANGE moves with the rows), and `status` compares it with
the topic's, to say when a resync calls for a rebuild.

A table without the mark holds generation 0: filled from the topic's beginning.

The mark also records, per partition, the offset the table's rows reach (`start`): where
the rebuild's group stood when its table was swapped in. It is durable with the rows, so a
live group that restarts behind it (the rebuild killed before it moved the group, or the
group's offsets reset to older ones) jumps to it instead of writing an older generation's
rows into the table (consumer/rebuild/first_read.py `floor`).

It also names the group a Kafka engine reads with (`engine_group`), recorded by
consumer/kafka_engine/evolve.py before it drops the Kafka table whose comment names it: an
apply killed before it made that table again reads on with the recorded group, not an older
one that stands past messages the table holds without their newer columns.
"""

from __future__ import annotations

import json
from dataclasses import replace

from consumer.tables.placement import Placement
from schemas.clickhouse import literal
from schemas.target import Target
from services.table_marks import ENGINE_KEY, KEY, START_KEY, Mark, marked


def mark(
    placement: Placement, target: Target, generation: int, start: dict[int, int] | None = None
) -> None:
    """Record that target holds generation, its rows reaching start (a new mark: a rebuilt
    table's Kafka engine is given its group by the rebuild)."""
    _write(placement, target, Mark(generation, dict(start or {})))


def record_engine_group(placement: Placement, target: Target, group: str) -> None:
    """Record, beside target's generation mark, the group its Kafka engine reads with."""
    _write(placement, target, replace(marked(placement.client, target), engine_group=group))


def _write(placement: Placement, target: Target, found: Mark) -> None:
    recorded: dict[str, object] = {KEY: found.generation}
    if found.start:
        recorded[START_KEY] = {str(p): offset for p, offset in sorted(found.start.items())}
    if found.engine_group:
        recorded[ENGINE_KEY] = found.engine_group
    comment = literal(json.dumps(recorded))
    placement.ddl(lambda on: f"ALTER TABLE {target.local.name}{on} MODIFY COMMENT {comment}")
