"""A ClickHouse client as the consumer and cdfbridge-verify open it: from the shared
[clickhouse] settings, its errors sorted (services/clickhouse_errors.py); and a target
table's columns as ClickHouse lists them."""

from __future__ import annotations

from typing import Any

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.httpclient import HttpClient

from schemas.changes import IS_DELETED, VERSION
from schemas.target import REBUILD_HINT, SchemaMismatchError, Target
from services.clickhouse_errors import GATEWAY_RETRIES, sorted_errors
from services.settings import ClickHouseSettings


def connect(settings: ClickHouseSettings, **kwargs: Any) -> Client:
    """A clickhouse-connect client; unreachable → ClickHouseUnavailableError, and a 502
    from a proxy in front of ClickHouse is raised as unreachable too."""
    with sorted_errors(settings.url):
        client = clickhouse_connect.get_client(
            dsn=settings.url,
            username=settings.username,
            password=settings.password.get_secret_value(),
            database=settings.database,
            **settings.tls(),
            **kwargs,
        )
    if isinstance(client, HttpClient):
        # urllib3 takes a Retry where clickhouse-connect declares a count.
        client.http_retries = GATEWAY_RETRIES  # type: ignore[assignment]
    return client


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
