"""Insert one partition batch into ClickHouse: the raw Confluent-framed values concatenated,
`FORMAT AvroConfluent`, decoded by ClickHouse through the schema registry.

ClickHouse errors are sorted here, where they enter our code: unreachable or overloaded →
ClickHouseUnavailableError (retry), bad data → BadDataError (isolate), else InsertError.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import clickhouse_connect
from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

from consumer.errors import BadDataError, ClickHouseUnavailableError, InsertError
from consumer.table import Target
from schemas.settings import ClickHouseSettings

# Server error codes that a retry of the same insert can get past.
TRANSIENT_CODES = frozenset({159, 164, 202, 203, 209, 210, 241, 242, 252, 425, 999})
# Codes of an insert whose data ClickHouse could not read or store.
DATA_CODES = frozenset({6, 27, 32, 33, 36, 38, 41, 43, 53, 69, 70, 72, 86, 117, 321, 407, 1000})
# ClickHouse could not fetch a schema from the registry: poison only if the id is unknown.
REGISTRY_FETCH_CODES = frozenset({86, 1000})
_CODE = re.compile(r"code: (\d+)", re.IGNORECASE)


def connect(settings: ClickHouseSettings, **kwargs: Any) -> Any:
    """A clickhouse-connect client; unreachable → ClickHouseUnavailableError."""
    try:
        return clickhouse_connect.get_client(
            dsn=settings.url,
            username=settings.username,
            password=settings.password.get_secret_value(),
            database=settings.database,
            **kwargs,
        )
    except OperationalError as exc:
        raise ClickHouseUnavailableError(
            f"ClickHouse at {settings.url} unreachable: {exc}"
        ) from exc


class Sink:
    def __init__(self, client: Any, target: Target, registry_url: str) -> None:
        self.client = client
        self.target = target
        self.registry_url = registry_url

    def insert(self, values: Sequence[bytes], columns: Sequence[str], token: str) -> None:
        """One insert, one block: `values` are whole Confluent-framed Avro messages."""
        settings = {
            "format_avro_schema_registry_url": self.registry_url,
            # Older schemas lack columns added later; those read as their default.
            "input_format_avro_allow_missing_fields": 1,
            "insert_deduplicate": 1,
            "insert_deduplication_token": token,
            # Versions of a key are folded by merges and FINAL reads anyway; folding them in
            # every insert too costs about a third of its time.
            "optimize_on_insert": 0,
        }
        try:
            self.client.raw_insert(
                self.target.name,
                column_names=list(columns),
                insert_block=b"".join(values),
                fmt="AvroConfluent",
                settings=settings,
            )
        except OperationalError as exc:
            raise ClickHouseUnavailableError(f"ClickHouse unreachable: {exc}") from exc
        except DatabaseError as exc:
            raise classify(exc) from exc


def error_code(exc: Exception) -> int | None:
    match = _CODE.search(str(exc))
    return int(match[1]) if match else None


def classify(exc: DatabaseError) -> Exception:
    code = error_code(exc)
    text = str(exc)
    if code in TRANSIENT_CODES or (code is None and _looks_unavailable(text)):
        return ClickHouseUnavailableError(f"ClickHouse is unavailable (code {code}): {text}")
    if code in DATA_CODES:
        return BadDataError(f"ClickHouse rejected the data (code {code}): {text}", code)
    return InsertError(f"ClickHouse refused the insert (code {code}): {text}", code)


def _looks_unavailable(text: str) -> bool:
    return any(status in text for status in (" 502", " 503", " 504"))
