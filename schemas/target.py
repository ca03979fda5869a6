"""The ClickHouse table a topic is replicated into, as the consumer creates it and
cdfbridge-verify reads it: its quoted names, and the error and hint when it is not what
the topic needs (services/clickhouse_client.py reads its columns: `existing_columns`).

A cdfbridge table carries `_version` and `_is_deleted` MATERIALIZED from schemas/changes.py;
a table without them is not one, whichever side meets it.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.clickhouse import quote
from schemas.errors import TerminalError

REBUILD_HINT = "rebuild the table from the topic: cdfbridge-consumer rebuild"
# On a cluster, the table on each shard that a Distributed table of the target's name reads.
LOCAL_SUFFIX = "_local"


class SchemaMismatchError(TerminalError):
    """The target table and the topic's value schema disagree; the message names the columns
    and points at `cdfbridge-consumer rebuild`."""


@dataclass(frozen=True)
class Target:
    """`table` is what readers query and the consumer inserts into. On a cluster it is a
    Distributed table, and the rows are stored in `local` on each shard."""

    database: str
    table: str
    cluster: str = ""

    @property
    def name(self) -> str:
        return f"{quote(self.database)}.{quote(self.table)}"

    @property
    def current_view(self) -> str:
        return f"{quote(self.database)}.{quote(self.table + '_current')}"

    @property
    def local(self) -> Target:
        """The table that stores the rows: this one, or on a cluster each shard's."""
        return Target(self.database, self.table + LOCAL_SUFFIX) if self.cluster else self

    def renamed(self, table: str) -> Target:
        return Target(self.database, table, self.cluster)
