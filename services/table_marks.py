"""What cdfbridge records in the comments of a target's ClickHouse tables, read back: by
the consumer, which writes them (consumer/tables/generation.py, consumer/kafka_engine/
ddl.py), and by verify, which follows the group that fills a table.

- The table that stores the rows holds the generation *mark*: the generation of the topic
  it holds, per partition the offset its rows reach, and the group its Kafka engine reads
  with once an evolve recorded it (consumer/tables/generation.py says why each is there).
- A Kafka-engine table (`<table>_kafka`) names the value schema it was made from and the
  group it reads with (`BUILT_FROM`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from clickhouse_connect.driver.client import Client

from schemas.target import Target

KEY = "cdfbridge_generation"
START_KEY = "cdfbridge_start"
ENGINE_KEY = "cdfbridge_engine_group"


@dataclass(frozen=True)
class Mark:
    generation: int = 0
    start: dict[int, int] = field(default_factory=dict)  # partition → offset the rows reach
    engine_group: str = ""  # the Kafka engine's group, once an evolve recorded it


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


BUILT_FROM = "cdfbridge value schema {schema_id}, group {group}"


def queue(target: Target) -> Target:
    """target's Kafka-engine table."""
    return target.renamed(f"{target.table}_kafka")


# BUILT_FROM, read back.
_BUILT = re.compile(r"cdfbridge value schema (\d+), group (.+)")


@dataclass(frozen=True)
class Built:
    """What a Kafka table was made from: a value schema id (0: made by an earlier release,
    which did not say) and the group it reads with."""

    schema_id: int
    group: str | None


def built_from(client: Client, target: Target) -> Built | None:
    """What the target's Kafka table was made from; None: it has none."""
    rows = client.query(
        "SELECT comment FROM system.tables WHERE database = {db:String} AND name = {t:String}",
        parameters={"db": target.database, "t": queue(target).table},
    ).result_rows
    if not rows:
        return None
    found = _BUILT.fullmatch(str(rows[0][0]))
    return Built(int(found[1]), found[2]) if found else Built(0, None)
