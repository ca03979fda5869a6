"""A ClickHouse client as the consumer and cdfbridge-verify open it: from the shared
[clickhouse] settings, its errors sorted (services/clickhouse_errors.py); and a target
table's columns as ClickHouse lists them."""

from __future__ import annotations

import functools
from typing import Any

import clickhouse_connect
from clickhouse_connect.driver import httputil
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.httpclient import HttpClient
from urllib3 import PoolManager

from schemas.changes import IS_DELETED, VERSION
from schemas.target import REBUILD_HINT, SchemaMismatchError, Target
from services.clickhouse_errors import GATEWAY_RETRIES, sorted_errors
from services.settings import ClickHouseSettings


def connect(settings: ClickHouseSettings, pool_size: int | None = None, **kwargs: Any) -> Client:
    """A clickhouse-connect client; unreachable → ClickHouseUnavailableError, and a 502
    from a proxy in front of ClickHouse is raised as unreachable too. pool_size: the
    connections the process's clients keep open to the server, where more than
    clickhouse-connect's 8 run at once (the consumer's writers and its other calls): past
    the pool's size urllib3 closes each extra connection after its request, with a warning."""
    tls = settings.tls()
    if pool_size is not None:
        kwargs["pool_mgr"] = shared_pool(pool_size, **tls)
    with sorted_errors(settings.url):
        client = clickhouse_connect.get_client(
            dsn=settings.url,
            username=settings.username,
            password=settings.password.get_secret_value(),
            database=settings.database,
            **tls,
            **kwargs,
        )
    if isinstance(client, HttpClient):
        # urllib3 takes a Retry where clickhouse-connect declares a count.
        client.http_retries = GATEWAY_RETRIES  # type: ignore[assignment]
    return client


@functools.lru_cache(maxsize=4)
def shared_pool(size: int, verify: bool = True, ca_cert: str | None = None) -> PoolManager:
    """One urllib3 pool manager of `size` connections a host, for the process's clients of
    that size and TLS settings (a client given a pool takes its TLS settings from it)."""
    pool: PoolManager = httputil.get_pool_manager(maxsize=size, verify=verify, ca_cert=ca_cert)
    return pool


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


def insert_settings(target: Target) -> dict[str, int]:
    """An insert into a cluster's Distributed table returns once every shard has its rows
    (each under the insert's dedup token), so a retry is a no-op where a shard has them."""
    return {"distributed_foreground_insert": 1} if target.cluster else {}
