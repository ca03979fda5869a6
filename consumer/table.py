"""The target table: a ReplacingMergeTree made from the value schema, checked and evolved.

    CREATE TABLE db.t (<value columns>, _version UInt64 MATERIALIZED ..., _is_deleted UInt8
    MATERIALIZED ...) ENGINE = ReplacingMergeTree(_version, _is_deleted)
    [PARTITION BY <expression>] ORDER BY (<key>)

and a view `<t>_current` that reads FINAL without deleted rows. Every identifier is quoted;
the PARTITION BY expression is the setting's, as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clickhouse_connect.driver.client import Client

from consumer.column_types import extends
from schemas.changes import IS_DELETED, IS_DELETED_SQL, UPDATE_PREIMAGE, VERSION, VERSION_SQL
from schemas.clickhouse import quote
from schemas.target import REBUILD_HINT, SchemaMismatchError, Target
from services.clickhouse_client import existing_columns

Columns = Sequence[tuple[str, str]]


def create_table_sql(
    target: Target,
    columns: Columns,
    order_by: Sequence[str],
    dedup_window: int,
    partition_by: str = "",
) -> str:
    body = ",\n    ".join(f"{quote(name)} {kind}" for name, kind in columns)
    key = ", ".join(quote(name) for name in order_by)
    partition = f"PARTITION BY {partition_by}\n" if partition_by else ""
    return (
        f"CREATE TABLE IF NOT EXISTS {target.name} (\n    {body},\n"
        f"    {quote(VERSION)} UInt64 MATERIALIZED {VERSION_SQL},\n"
        f"    {quote(IS_DELETED)} UInt8 MATERIALIZED {IS_DELETED_SQL}\n)\n"
        f"ENGINE = ReplacingMergeTree({quote(VERSION)}, {quote(IS_DELETED)})\n"
        f"{partition}ORDER BY ({key})\n"
        f"SETTINGS non_replicated_deduplication_window = {dedup_window}"
    )


def current_view_sql(target: Target) -> str:
    """Recreated after every ALTER: a view's columns are fixed when it is created."""
    return (
        f"CREATE OR REPLACE VIEW {target.current_view} AS "  # noqa: S608 - quoted names
        f"SELECT * FROM {target.name} FINAL WHERE {quote(IS_DELETED)} = 0"
    )


def additions(target: Target, existing: dict[str, str], wanted: Columns) -> list[tuple[str, str]]:
    """Columns to ADD so the table holds `wanted`; raises SchemaMismatchError naming every
    column that differs in type, or is new and not nullable, or is gone and not nullable."""
    retyped = [
        f"{name} is {existing[name]} in the table but {kind} in the schema"
        for name, kind in wanted
        if name in existing
        and _norm(existing[name]) != _norm(_older(kind))
        and not extends(kind, existing[name])  # widened, or a struct that gained fields: grown
        and not extends(existing[name], kind)  # an older schema's narrower one: read into it
    ]
    new = [(name, kind) for name, kind in wanted if name not in existing]
    required = [f"{name} {kind} is new and not nullable" for name, kind in new if not _null(kind)]
    names = {name for name, _ in wanted}
    gone = [
        f"{name} {kind} is in the table, not in the schema, and not nullable"
        for name, kind in existing.items()
        if name not in names and not _null(kind)
    ]
    problems = retyped + required + gone
    if problems:
        raise SchemaMismatchError(
            f"table {target.name} does not match the value schema: {'; '.join(problems)}. "
            f"To replace the table with one of the new schema, {REBUILD_HINT}"
        )
    return new


def grown(existing: dict[str, str], wanted: Columns) -> list[tuple[str, str]]:
    """Columns Delta widened, or whose structs gained fields (consumer/column_types.py), to
    MODIFY."""
    return [
        (name, kind)
        for name, kind in wanted
        if name in existing
        and _norm(existing[name]) != _norm(kind)
        and extends(kind, existing[name])
    ]


def add_columns_sql(target: Target, new: Columns) -> str:
    adds = ", ".join(f"ADD COLUMN IF NOT EXISTS {quote(name)} {kind}" for name, kind in new)
    return f"ALTER TABLE {target.name} {adds}"


def ensure(
    client: Client,
    target: Target,
    columns: Columns,
    order_by: Sequence[str],
    dedup_window: int,
    partition_by: str = "",
) -> list[tuple[str, str]]:
    """Create the table and view when missing, else check them, add new columns and grow
    widened ones and structs that gained fields. Returns the columns added or grown."""
    existing = existing_columns(client, target)
    if existing is None:
        client.command(create_table_sql(target, columns, order_by, dedup_window, partition_by))
        client.command(current_view_sql(target))
        return []
    check_engine(client, target, dedup_window, partition_by)
    follow_delete_rule(client, target)
    new, modified = additions(target, existing, columns), grown(existing, columns)
    if new:
        client.command(add_columns_sql(target, new))
    for name, kind in modified:  # ClickHouse converts the stored values in a mutation
        client.command(f"ALTER TABLE {target.name} MODIFY COLUMN {quote(name)} {kind}")
    if new or modified:
        client.command(current_view_sql(target))
    return new + modified


def check_engine(client: Client, target: Target, dedup_window: int, partition_by: str = "") -> None:
    """An existing table must be a ReplacingMergeTree, partitioned by `partition_by` when it
    is set; one without an insert deduplication window gets one, or a retried insert would
    double its rows."""
    [(engine, full, partition_key)] = client.query(
        "SELECT engine, engine_full, partition_key FROM system.tables "
        "WHERE database = {db:String} AND name = {t:String}",
        parameters={"db": target.database, "t": target.table},
    ).result_rows
    if "ReplacingMergeTree" not in engine:
        raise SchemaMismatchError(
            f"table {target.name} is {engine}, not ReplacingMergeTree: drop it, set another "
            f"table, or {REBUILD_HINT}"
        )
    if partition_by and _partition(partition_key) != _partition(partition_by):
        raise SchemaMismatchError(
            f"table {target.name} is partitioned by {partition_key or 'nothing'}, but "
            f"partition_by is {partition_by}: set partition_by to match the table, or, to "
            f"repartition it, {REBUILD_HINT}"
        )
    window = re.search(r"non_replicated_deduplication_window = (\d+)", full)
    if not engine.startswith("Replicated") and (window is None or int(window[1]) == 0):
        client.command(
            f"ALTER TABLE {target.name} MODIFY SETTING "
            f"non_replicated_deduplication_window = {dedup_window}"
        )


def follow_delete_rule(client: Client, target: Target) -> None:
    """A table made when an update's preimage did not delete its key gets the contract's
    _is_deleted expression; rows it already holds keep theirs (none is a preimage unless
    the topic was published with include_preimage)."""
    expression = client.command(
        "SELECT default_expression FROM system.columns "
        "WHERE database = {db:String} AND table = {t:String} AND name = {c:String}",
        parameters={"db": target.database, "t": target.table, "c": IS_DELETED},
    )
    if UPDATE_PREIMAGE not in str(expression):
        client.command(
            f"ALTER TABLE {target.name} MODIFY COLUMN {quote(IS_DELETED)} UInt8 "
            f"MATERIALIZED {IS_DELETED_SQL}"
        )


def nullable_tuples(client: Client) -> bool:
    """Whether the server stores Nullable(Tuple) (`enable_nullable_tuple_type`, 26.x)."""
    found = client.command(
        "SELECT count() FROM system.settings "
        "WHERE name = 'enable_nullable_tuple_type' AND value = '1'"
    )
    return bool(int(str(found)))


def _older(kind: str) -> str:
    """The type earlier releases made for the same Avro: Int32 for Int8 and Int16, Tuple for
    Nullable(Tuple). Tables made by them keep working; the insert converts."""
    kind = re.sub(r"(?<![`\w])Int(8|16)(?![`\w])", "Int32", kind)
    while (start := kind.find("Nullable(Tuple(")) >= 0:
        close = _closing(kind, start + len("Nullable("))
        kind = kind[:start] + kind[start + len("Nullable(") : close] + kind[close + 1 :]
    return kind


def _closing(kind: str, at: int) -> int:
    """Index of the parenthesis closing the one opened before `at`; skips quoted names."""
    depth, quoted, i = 1, False, at
    while depth:
        char = kind[i]
        if quoted:
            quoted, i = char != "`", i + (2 if char == "\\" else 1)
            continue
        quoted = char == "`"
        depth += {"(": 1, ")": -1}.get(char, 0)
        i += 1
    return i - 1


def _partition(expression: str) -> str:
    """A partition key as ClickHouse lists it and as written compare equal: no spaces, no
    backticks, `tuple()` for none."""
    found = _norm(expression)
    return "" if found == "tuple()" else found


def _norm(kind: str) -> str:
    return re.sub(r"[\s`]", "", kind)


def _null(kind: str) -> bool:
    # Array, Map and Tuple cannot be Nullable; a missing one reads as empty.
    return kind.startswith(("Nullable(", "Array(", "Map(", "Tuple("))
