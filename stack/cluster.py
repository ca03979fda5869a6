"""A ClickHouse cluster of two shards on loopback, from the same chdb-core package as the
stack's single server: `cdfbridge-stack up cluster`.

Each shard is one server with the cluster `cdfbridge` in its remote_servers and its
{shard} and {replica} macros, so a Distributed table on either reaches both. chdb's server
has no Keeper and cannot start the interserver endpoint that replication needs, so there
are no replicas here, no ON CLUSTER DDL (the consumer runs its DDL on each shard, through
clickhouse.node_urls) and no Replicated tables.
"""

from __future__ import annotations

from stack.clickhouse import TEMPLATES, ClickHouse

CLUSTER = "cdfbridge"
SHARDS = 2


class Shard(ClickHouse):
    """Shard `number` of the local cluster."""

    number = 1

    @property
    def endpoint(self) -> str:
        return self.settings.shard_url(self.number)

    @property
    def plain_url(self) -> str:
        return self.endpoint

    @property
    def ports(self) -> tuple[int, ...]:
        offset = self.number - 1
        return (self.settings.cluster_http_port + offset, self.settings.cluster_tcp_port + offset)

    def extra_config(self) -> str:
        """The cluster, the macros, and users.xml beside config.xml."""
        users = (TEMPLATES / "clickhouse-cluster-users.xml").read_text()
        (self.dir / "users.xml").write_text(users)
        shard = (
            "            <shard><replica><host>{host}</host><port>{port}</port></replica></shard>"
        )
        shards = "\n".join(
            shard.format(host="127.0.0.1", port=self.settings.cluster_tcp_port + n)
            for n in range(SHARDS)
        )
        return (
            (TEMPLATES / "clickhouse-cluster.xml")
            .read_text()
            .format(cluster=CLUSTER, shards=shards, shard=f"{self.number:02d}", replica=self.name)
        )


class Shard1(Shard):
    name = "shard-1"
    number = 1


class Shard2(Shard):
    name = "shard-2"
    number = 2


NAMES = (Shard1.name, Shard2.name)
