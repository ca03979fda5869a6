"""The target table: a ReplacingMergeTree made from the value schema, checked and evolved.

    CREATE TABLE db.t (<value columns>, _version UInt64 MATERIALIZED ..., _is_deleted UInt8
    MATERIALIZED ...) ENGINE = ReplacingMergeTree(_version, _is_deleted)
    [PARTITION BY <expression>] ORDER BY (<key>)

and a view `<t>_current` that reads FINAL without deleted rows. Every identifier is quoted;
the PARTITION BY expression is the setting's, as written. On a cluster the table is made on
every shard, behind a Distributed table, through the DDL of consumer/tables/placement.py. How an
existing table's columns compare with the schema's is consumer/tables/table_check.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial

from clickhouse_connect.driver.client import Client

from consumer.tables.placement import ENGINE, Placement, distributed_sql
from consumer.tables.table_check import Columns, additions, grown, same_partition
from schemas.changes import (
    GENERATION,
    IS_DELETED,
    IS_DELETED_SQL,
    UPDATE_PREIMAGE,
    VERSION,
    version_sql,
)
from schemas.clickhouse import quote
from schemas.target import REBUILD_HINT, SchemaMismatchError, Target
from services.clickhouse_client import existing_columns


def create_table_sql(
    target: Target,
    columns: Columns,
    order_by: Sequence[str],
    dedup_window: int,
    partition_by: str = "",
    on_cluster: str = "",
    engine: str = ENGINE,
) -> str:
    body = ",\n    ".join(f"{quote(name)} {kind}" for name, kind in columns)
    key = ", ".join(quote(name) for name in order_by)
    partition = f"PARTITION BY {partition_by}\n" if partition_by else ""
    window = "replicated" if engine.startswith("Replicated") else "non_replicated"
    rule = version_sql(any(name == GENERATION for name, _ in columns))
    return (
        f"CREATE TABLE IF NOT EXISTS {target.name}{on_cluster} (\n    {body},\n"
        f"    {quote(VERSION)} UInt64 MATERIALIZED {rule},\n"
        f"    {quote(IS_DELETED)} UInt8 MATERIALIZED {IS_DELETED_SQL}\n)\n"
        f"ENGINE = {engine}\n"
        f"{partition}ORDER BY ({key})\n"
        f"SETTINGS {window}_deduplication_window = {dedup_window}"
    )


def current_view_sql(target: Target, on_cluster: str = "") -> str:
    """Recreated after every ALTER: a view's columns are fixed when it is created."""
    return (
        f"CREATE OR REPLACE VIEW {target.current_view}{on_cluster} AS "  # noqa: S608
        f"SELECT * FROM {target.name} FINAL WHERE {quote(IS_DELETED)} = 0"
    )


def add_columns_sql(target: Target, new: Columns, on_cluster: str = "") -> str:
    adds = ", ".join(f"ADD COLUMN IF NOT EXISTS {quote(name)} {kind}" for name, kind in new)
    return f"ALTER TABLE {target.name}{on_cluster} {adds}"


def modify_columns_sql(target: Target, grown: Columns, on_cluster: str = "") -> str:
    """ClickHouse converts the stored values in a mutation."""
    changes = ", ".join(f"MODIFY COLUMN {quote(name)} {kind}" for name, kind in grown)
    return f"ALTER TABLE {target.name}{on_cluster} {changes}"


def delete_rule_sql(target: Target, on_cluster: str = "") -> str:
    return (
        f"ALTER TABLE {target.name}{on_cluster} MODIFY COLUMN {quote(IS_DELETED)} UInt8 "
        f"MATERIALIZED {IS_DELETED_SQL}"
    )


def generation_rule_sql(target: Target, on_cluster: str = "") -> str:
    """For a table that gains `_generation`: rows it holds keep their versions, all of older
    generations or of one whose values lacked it, which every later row outranks."""
    return (
        f"ALTER TABLE {target.name}{on_cluster} MODIFY COLUMN {quote(VERSION)} UInt64 "
        f"MATERIALIZED {version_sql(True)}"
    )


def ensure(
    placement: Placement,
    target: Target,
    columns: Columns,
    order_by: Sequence[str],
    dedup_window: int,
    partition_by: str = "",
    shard_by: Sequence[str] = (),
) -> list[tuple[str, str]]:
    """Create the table and view when missing, else check them, add new columns and grow
    widened ones and structs that gained fields. Returns the columns added or grown.
    On a cluster, `shard_by` (the primary key) shards the Distributed table."""
    client, local, engine = placement.client, target.local, placement.engine()
    existing = existing_columns(client, local)
    if existing is None:
        placement.ddl(
            lambda on: create_table_sql(
                local, columns, order_by, dedup_window, partition_by, on, engine
            )
        )
    if target.cluster and existing_columns(client, target) is None:
        placement.ddl(lambda on: distributed_sql(target, shard_by or order_by, on))
    if existing is None:
        placement.ddl(lambda on: current_view_sql(target, on))
        return []
    check_engine(placement, local, dedup_window, partition_by)
    follow_delete_rule(placement, target)
    new, modified = additions(target, existing, columns), grown(existing, columns)
    for table in _tables(target):
        if new:
            placement.ddl(partial(add_columns_sql, table, new))
        if modified:
            placement.ddl(partial(modify_columns_sql, table, modified))
    if any(name == GENERATION for name in [*existing, *(n for n, _ in new)]):
        follow_generation_rule(placement, target)
    if new or modified:
        placement.ddl(lambda on: current_view_sql(target, on))
    return new + modified


def _tables(target: Target) -> tuple[Target, ...]:
    """The tables whose columns follow the schema: the local one, and a Distributed one."""
    return (target.local, target) if target.cluster else (target,)


def check_engine(
    placement: Placement, target: Target, dedup_window: int, partition_by: str = ""
) -> None:
    """An existing table must be a ReplacingMergeTree, partitioned by `partition_by` when it
    is set; one without an insert deduplication window gets one, or a retried insert would
    double its rows."""
    client = placement.client
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
        setting = f"MODIFY SETTING non_replicated_deduplication_window = {dedup_window}"
        placement.ddl(lambda on: f"ALTER TABLE {target.name}{on} {setting}")


def follow_delete_rule(placement: Placement, target: Target) -> None:
    """A table made when an update's preimage did not delete its key gets the contract's
    _is_deleted expression; rows it already holds keep theirs (none is a preimage unless
    the topic was published with include_preimage)."""
    if UPDATE_PREIMAGE not in _expression(placement, target, IS_DELETED):
        for table in _tables(target):
            placement.ddl(partial(delete_rule_sql, table))


def follow_generation_rule(placement: Placement, target: Target) -> None:
    """A table with `_generation` whose `_version` lacks it (the column just added, or a
    process killed between the ADD and this) gets the full rule."""
    if GENERATION not in _expression(placement, target, VERSION):
        for table in _tables(target):
            placement.ddl(partial(generation_rule_sql, table))


def _expression(placement: Placement, target: Target, column: str) -> str:
    """The MATERIALIZED expression of a column of the table that stores the rows."""
    local = target.local
    return str(
        placement.client.command(
            "SELECT default_expression FROM system.columns "
            "WHERE database = {db:String} AND table = {t:String} AND name = {c:String}",
            parameters={"db": local.database, "t": local.table, "c": column},
        )
    )


def nullable_tuples(client: Client) -> bool:
    """Whether the server stores Nullable(Tuple) (`enable_nullable_tuple_type`, 26.x)."""
    found = client.command(
        "SELECT count() FROM system.settings "
        "WHERE name = 'enable_nullable_tuple_type' AND value = '1'"
    )
    return bool(int(str(found)))
