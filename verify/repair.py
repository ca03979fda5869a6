"""Repair what an as-of round found (verify/asof.py), inside ClickHouse, in the buckets that
differ, while the pipeline runs.

1. lost and wrong keys: the Delta table's row at V is inserted, as a `snapshot` row of
   commit V. Its `_version` (schemas/changes.py) is at or above that of any row the replica
   holds of a key that is not moving, and below that of any later change: a change the
   consumer writes before or after the repair wins over it;
2. extra keys: a `delete` of commit V, which outranks the extra row of an older commit or
   of an older generation; of commit V + 1 where the extra row claims commit V itself.
   Delta's table at V lacks the key, so commit V + 1 can only insert it, which outranks
   that delete. (Such a key is then moving until a round is made at V + 1 or later.)
Both are written in V's generation (`Scope.generation`), where the target has the column.
Each step selects the keys again when it runs: a key that moved since the round is left out
of both sides, and left alone. A key Delta holds more than one row of at V is left alone
too: the replica keeps one row per key, so writing either row would flip the key between
them round after round (the round names such keys: verify/asof_keys.py). A second round then checks the table (the caller's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schemas.changes import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    DELETE,
    GENERATION,
    SNAPSHOT,
    VERSION,
)
from schemas.changes import version as row_version
from schemas.clickhouse import literal, quote
from schemas.target import Target
from services.clickhouse_client import insert_settings
from verify.asof import Scope, sides
from verify.canonical import row_hash
from verify.lake_side import Columns, LakeSide


def repair(
    client: Any,
    lake: LakeSide,
    target: Target,
    columns: Columns,
    scope: Scope,
    buckets: Sequence[int],
    generations: bool,
) -> None:
    """1. and 2., for the keys of `buckets`; generations: the target has the `_generation`
    column, and the rows are written in scope.generation."""
    lake_rows, replica_rows = sides(lake, target, columns, scope, buckets)
    v, key = lake.version, scope.key_tuple
    generation = scope.generation if generations else None
    claims_v = row_version(v, DELETE, scope.generation)  # an extra row at or above: commit V
    names = [quote(name) for name, _ in columns]
    held = f"tuple({key}, {row_hash(columns)})"
    repeated = f"SELECT {key} FROM ({lake_rows}) GROUP BY {key} HAVING count() > 1"  # noqa: S608
    _insert(
        client,
        lake,
        target,
        names,
        f"SELECT * FROM ({lake_rows}) WHERE {held} GLOBAL NOT IN "  # noqa: S608 - quoted
        f"(SELECT {held} FROM ({replica_rows})) AND {key} GLOBAL NOT IN ({repeated})",
        (SNAPSHOT, str(v), generation),
    )
    _insert(
        client,
        lake,
        target,
        names,
        f"SELECT * FROM ({replica_rows}) WHERE {scope.key_tuple} GLOBAL NOT IN "  # noqa: S608
        f"(SELECT {scope.key_tuple} FROM ({lake_rows}))",
        (DELETE, f"if({quote(VERSION)} < {claims_v}, {v}, {v + 1})", generation),
    )


def _insert(
    client: Any,
    lake: LakeSide,
    target: Target,
    names: list[str],
    rows: str,
    change: tuple[str, str, int | None],
) -> None:
    """INSERT rows into target as changes of one type, commit version (SQL) and generation."""
    kind, version, generation = change
    metadata = {
        CHANGE_TYPE: literal(kind),
        COMMIT_VERSION: version,
        COMMIT_TIMESTAMP: lake.committed,
    }
    if generation is not None:
        metadata[GENERATION] = str(generation)
    columns = ", ".join([*names, *map(quote, metadata)])
    values = ", ".join([*names, *metadata.values()])
    client.command(
        f"INSERT INTO {target.name} ({columns}) SELECT {values} FROM ({rows})",  # noqa: S608
        parameters=lake.parameters,
        settings={**lake.settings, **insert_settings(target), "insert_deduplicate": 0},
    )
