"""The ClickHouse table a topic is replicated into, as the consumer creates it and
cdfbridge-verify reads it: its quoted names, and its columns as ClickHouse lists them.

A cdfbridge table carries `_version` and `_is_deleted` MATERIALIZED from schemas/changes.py;
a table without them is not one, whichever side meets it.
"""

from __future__ import annotations

from dataclasses import dataclass

from clickhouse_connect.driver.client import Client

from schemas.changes import IS_DELETED, VERSION
from schemas.clickhouse import quote
from schemas.errors import TerminalError

REBUILD_HINT = "rebuild the table from the topic: cdfbridge-consumer rebuild"


class SchemaMismatchError(TerminalError):
    """The target table and the topic's value schema disagree; the message names the columns
    and points at `cdfbridge-consumer rebuild`."""


@dataclass(frozen=True)
class Target:
    database: str
    table: str

    @property
    def name(self) -> str:
        return f"{quote(self.database)}.{quote(self.table)}"

    @property
    def current_view(self) -> str:
        return f"{quote(self.database)}.{quote(self.table + '_current')}"

    def renamed(self, table: str) -> Target:
        return Target(self.database, table)


def existing_columns(client: Client, target: Target) -> dict[str, str] | None:
    """Ordinary columns of the table (name → type), or None when it does not exist; a table
    without the MATERIALIZED columns raises SchemaMismatchError."""
    rows = client.query(
        "SELECT name, type, default_kind FROM system.columns "
        "WHERE database = {db:String} AND table = {t:String} ORDER BY position",
        parameters={"db": target.database, "t": target.table},
    ).result_rows
    if not rows:
        return None
    derived = {name for name, _, kind in rows if kind == "MATERIALIZED"}
    if {VERSION, IS_DELETED} - derived:
        raise SchemaMismatchError(
            f"table {target.name} has no MATERIALIZED {VERSION} and {IS_DELETED} columns, so it "
            f"is not a cdfbridge table: drop it, or set another table, or {REBUILD_HINT}"
        )
    return {name: kind for name, kind, default in rows if default != "MATERIALIZED"}
