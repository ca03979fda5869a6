"""Where a target's tables live, and how DDL reaches every server that holds them.

- One server (no `[clickhouse] cluster`): the target is a ReplacingMergeTree there.
- A cluster whose servers have Keeper: each shard holds `<table>_local`, a
  ReplicatedReplacingMergeTree at the server's default replica path (its {shard} and
  {replica} macros), and every server a Distributed table `<table>` over them, sharded by
  a hash of the primary key, with the `_current` view over it. DDL runs once, ON CLUSTER.
- A cluster without Keeper (no replication, no ON CLUSTER): the same tables, with a
  ReplacingMergeTree on each shard, and the DDL run on every server of
  `[clickhouse] node_urls`.

Each key lives on one shard, so FINAL on each shard (what the view's FINAL does through
the Distributed table) folds all of a key's versions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clickhouse_connect.driver.client import Client

from schemas.clickhouse import literal, quote
from schemas.errors import ConfigError
from schemas.target import Target
from services.clickhouse_client import connect
from services.settings import ClickHouseSettings

ENGINE = "ReplacingMergeTree(`_version`, `_is_deleted`)"


def on_cluster(cluster: str) -> str:
    """The clause that makes a statement run on every server of `cluster` (Keeper's DDL)."""
    return f" ON CLUSTER {quote(cluster)}"


def engine(replicated: bool) -> str:
    """The engine of the table that stores the rows."""
    return f"Replicated{ENGINE}" if replicated else ENGINE


@dataclass(frozen=True)
class Placement:
    client: Client  # the server the consumer inserts through and queries
    cluster: str = ""
    replicated: bool = False  # the servers have Keeper: ON CLUSTER, Replicated tables
    nodes: tuple[Client, ...] = ()  # without Keeper: every server the DDL runs on

    @classmethod
    def of(cls, settings: ClickHouseSettings, client: Client) -> Placement:
        """The settings' placement, checked against the server: ConfigError naming the fix
        when the cluster is unknown, or has no Keeper and no node_urls."""
        if not settings.cluster:
            return cls(client)
        shards = client.command(
            "SELECT count() FROM system.clusters WHERE cluster = {c:String}",
            parameters={"c": settings.cluster},
        )
        if not int(str(shards)):
            raise ConfigError(
                f"ClickHouse at {settings.url} has no cluster {settings.cluster!r} in its "
                "remote_servers: check clickhouse.cluster against system.clusters"
            )
        if _has_keeper(client):
            return cls(client, settings.cluster, replicated=True)
        if not settings.node_urls:
            raise ConfigError(
                f"ClickHouse at {settings.url} has no Keeper, so DDL cannot run ON CLUSTER "
                f"{settings.cluster}: set clickhouse.node_urls to the HTTP URL of each of its "
                "servers, and cdfbridge runs its DDL on each"
            )
        nodes = tuple(
            connect(settings.model_copy(update={"url": url})) for url in settings.node_urls
        )
        return cls(client, settings.cluster, nodes=nodes)

    @property
    def on_cluster(self) -> str:
        return on_cluster(self.cluster) if self.replicated else ""

    def ddl(self, build: Callable[[str], str]) -> None:
        """Run the statement `build` makes for an ON CLUSTER clause ("" when the DDL runs
        server by server) on every server that holds the target."""
        self.ddl_each(lambda clause: [build(clause)])

    def ddl_each(self, build: Callable[[str], Sequence[str]]) -> None:
        """Run the statements `build` makes, in order, as `ddl` runs one."""
        for client in self.nodes or (self.client,):
            for statement in build(self.on_cluster):
                client.command(statement)

    def drop(self, kind: str, name: str) -> None:
        """DROP `kind` (TABLE or VIEW) `name` IF EXISTS, and wait (SYNC), on every server
        that holds it."""
        self.ddl(lambda on: f"DROP {kind} IF EXISTS {name}{on} SYNC")

    def engine(self) -> str:
        return engine(self.replicated)


def distributed_sql(
    target: Target, shard_by: Sequence[str], on_cluster: str = "", *, replace: bool = False
) -> str:
    """The Distributed table of the target's name over each shard's local table, sharded by
    the primary key's hash: a key's changes, deletes and rewrites too, all reach one shard.
    replace: made again over a local table whose columns changed (a rebuild's swap)."""
    key = ", ".join(quote(name) for name in shard_by)
    local = target.local
    create = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
    return (
        f"{create} {target.name}{on_cluster} AS {local.name}\n"
        f"ENGINE = Distributed({literal(target.cluster)}, {literal(local.database)}, "
        f"{literal(local.table)}, cityHash64({key}))"
    )


def _has_keeper(client: Client) -> bool:
    """Whether the server is connected to Keeper (or ZooKeeper)."""
    listed = client.command(
        "SELECT count() FROM system.tables "
        "WHERE database = 'system' AND name = 'zookeeper_connection'"
    )
    if not int(str(listed)):
        return False
    return bool(int(str(client.command("SELECT count() FROM system.zookeeper_connection"))))
