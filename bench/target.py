"""The ClickHouse table of the benchmark tables (the blog's shape, as the demo generator
writes it), with a counter of the rows inserted per Delta version.

The counter is a materialized view, so it counts each insert as it happens, even after
the ReplacingMergeTree has folded a key's versions together in a merge. Each of its rows
is stamped with the insert's time (`at`, ClickHouse's clock, to the millisecond), so when a
version's rows arrived can be read once at the end instead of by asking all along.
"""

from __future__ import annotations

from typing import Any

from consumer.tables.table import create_table_sql, current_view_sql
from schemas.target import Target

COLUMNS = [
    ("id", "String"),
    ("name", "Nullable(String)"),
    ("age", "Nullable(Int64)"),
    ("created_at", "Nullable(DateTime64(6, 'UTC'))"),
    ("_change_type", "String"),
    ("_commit_version", "Int64"),
    ("_commit_timestamp", "DateTime64(6, 'UTC')"),
    ("_generation", "Int64"),
]


def create(client: Any, database: str, name: str) -> None:
    """The table the consumer would create from the topic, plus its counter."""
    target = Target(database, name)
    client.command(create_table_sql(target, COLUMNS, ["id"], 10_000))
    client.command(current_view_sql(target))
    client.command(
        f"CREATE MATERIALIZED VIEW `{database}`.`{name}_inserted` "  # noqa: S608
        "ENGINE = MergeTree ORDER BY _commit_version AS SELECT _commit_version, count() AS rows, "
        f"now64(3) AS at FROM {target.name} GROUP BY _commit_version"
    )


def inserted(client: Any, database: str, name: str, since_version: int = 0) -> dict[int, int]:
    """Rows inserted so far per Delta version, from `since_version` on."""
    result = client.query(
        f"SELECT _commit_version, sum(rows) FROM `{database}`.`{name}_inserted` "  # noqa: S608
        "WHERE _commit_version >= {v:Int64} GROUP BY _commit_version",
        parameters={"v": since_version},
    )
    return {int(version): int(rows) for version, rows in result.result_rows}


def inserted_total(client: Any, database: str, name: str) -> int:
    return sum(inserted(client, database, name).values())
