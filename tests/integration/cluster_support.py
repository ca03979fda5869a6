"""A database on every shard of the local ClickHouse cluster, and settings that reach it."""

from __future__ import annotations

from typing import Any

import clickhouse_connect

from consumer.settings import ConsumerSettings
from services.settings import ClickHouseSettings
from stack.cluster import CLUSTER


def shard_clients(urls: tuple[str, ...]) -> list[Any]:
    return [clickhouse_connect.get_client(dsn=url) for url in urls]


def on_cluster(settings: ConsumerSettings, urls: tuple[str, ...], database: str) -> Any:
    """`settings` with their target on the cluster, reached through its first shard."""
    clickhouse = ClickHouseSettings(
        url=urls[0], database=database, cluster=CLUSTER, node_urls=list(urls)
    )
    return settings.model_copy(update={"clickhouse": clickhouse})


def keys_by_shard(urls: tuple[str, ...], database: str, table: str, key: str) -> list[set[Any]]:
    """Every key each shard's local table holds a row of, deleted or not."""
    return [
        set(shard.query(f"SELECT DISTINCT {key} FROM `{database}`.`{table}_local`").result_rows)
        for shard in shard_clients(urls)
    ]
