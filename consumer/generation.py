"""Which generation of its topic (schemas/progress.py) a ClickHouse table holds: a rebuild
records it in the comment of the table that stores the rows (on a cluster, each shard's
local table, which a rebuild's EXCHANGE moves with the rows), and `status` compares it with
the topic's, to say when a resync calls for a rebuild.

A table without the mark holds generation 0: filled from the topic's beginning.
"""

from __future__ import annotations

import json

from clickhouse_connect.driver.client import Client

from consumer.placement import Placement
from schemas.clickhouse import literal
from schemas.target import Target

KEY = "cdfbridge_generation"


def mark(placement: Placement, target: Target, generation: int) -> None:
    comment = literal(json.dumps({KEY: generation}))
    placement.ddl(lambda on: f"ALTER TABLE {target.local.name}{on} MODIFY COMMENT {comment}")


def held(client: Client, target: Target) -> int:
    """The generation target holds (0 without a mark, or with a comment of someone else's)."""
    found = client.query(
        "SELECT comment FROM system.tables WHERE database = {d:String} AND name = {t:String}",
        parameters={"d": target.database, "t": target.local.table},
    ).result_rows
    try:
        recorded = json.loads(found[0][0]) if found else {}
    except ValueError:
        return 0
    value = recorded.get(KEY, 0) if isinstance(recorded, dict) else 0
    return int(value) if isinstance(value, int) else 0
