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
from dataclasses import dataclass, field, replace

from clickhouse_connect.driver.client import Client

from consumer.tables.placement import Placement
from schemas.clickhouse import literal
from schemas.target import Target

KEY = "cdfbridge_generation"
START_KEY = "cdfbridge_start"
ENGINE_KEY = "cdfbridge_engine_group"


@dataclass(frozen=True)
class Mark:
    generation: int = 0
    start: dict[int, int] = field(default_factory=dict)  # partition → offset the rows reach
    engine_group: str = ""  # the Kafka engine's group, once an evolve recorded it


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


def held(client: Client, target: Target) -> int:
    """The generation target holds (0 without a mark, or with a comment of someone else's)."""
    return marked(client, target).generation


def marked(client: Client, target: Target) -> Mark:
    """The mark on target (generation 0 and no start without one)."""
    found = client.query(
        "SELECT comment FROM system.tables WHERE database = {d:String} AND name = {t:String}",
        parameters={"d": target.database, "t": target.local.table},
    ).result_rows
    return read_mark(found[0][0] if found else "")


def held_by(client: Client, targets: list[Target]) -> dict[Target, int]:
    """The generation each of `targets` holds, in one query (0 for a table not there)."""
    found = client.query(
        "SELECT database, name, comment FROM system.tables "
        "WHERE database IN {d:Array(String)} AND name IN {t:Array(String)}",
        parameters={
            "d": sorted({t.database for t in targets}),
            "t": sorted({t.local.table for t in targets}),
        },
    ).result_rows
    comments = {(database, name): comment for database, name, comment in found}
    return {t: read_mark(comments.get((t.database, t.local.table), "")).generation for t in targets}


def read_mark(comment: str) -> Mark:
    """The mark a table's comment records (generation 0 when it is someone else's)."""
    try:
        recorded = json.loads(comment) if comment else {}
    except ValueError:
        return Mark()
    if not isinstance(recorded, dict):
        return Mark()
    value, start = recorded.get(KEY, 0), recorded.get(START_KEY) or {}
    group = recorded.get(ENGINE_KEY, "")
    if not isinstance(value, int) or not isinstance(start, dict) or not isinstance(group, str):
        return Mark()
    return Mark(value, {int(p): int(o) for p, o in start.items()}, group)
