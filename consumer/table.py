"""The target table: a ReplacingMergeTree made from the value schema, checked and evolved.

    CREATE TABLE db.t (<value columns>, _version UInt64 MATERIALIZED ..., _is_deleted UInt8
    MATERIALIZED ...) ENGINE = ReplacingMergeTree(_version, _is_deleted)
    [PARTITION BY <expression>] ORDER BY (<key>)

and a view `<t>_current` that reads FINAL without deleted rows. Every identifier is quoted;
the PARTITION BY expression is the setting's, as written. How an existing table's columns
compare with the schema's is consumer/table_check.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clickhouse_connect.driver.client import Client

from consumer.table_check import Columns, additions, grown, same_partition
from schemas.changes import IS_DELETED, IS_DELETED_SQL, UPDATE_PREIMAGE, VERSION, VERSION_SQL
from schemas.clickhouse import quote
from schemas.target import REBUILD_HINT, SchemaMismatchError, Target
from services.clickhouse_client import existing_columns


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
    if partition_by and not same_partition(partition_key, partition_by):
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
