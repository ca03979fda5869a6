"""A ClickHouse client as the consumer and cdfbridge-verify open it: from the shared
[clickhouse] settings, its errors sorted (schemas/clickhouse_errors.py)."""

from __future__ import annotations

from typing import Any

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.httpclient import HttpClient

from schemas.clickhouse_errors import GATEWAY_RETRIES, sorted_errors
from schemas.settings import ClickHouseSettings


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
