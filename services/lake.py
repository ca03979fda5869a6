"""A Delta table as ClickHouse reads it itself: the table function for its location, with
the `[storage]` credentials passed as query parameters, so that no secret is ever part of a
statement's text (`system.query_log`) or of a table's DDL.

| location                                | ClickHouse reads it with                      |
| --------------------------------------- | --------------------------------------------- |
| `/path` or `file:/path` (on its host)   | `deltaLakeLocal(path)`                         |
| `s3://`, `s3a://bucket/key`             | `deltaLake(url[, key id, secret[, token]])`    |
| anything else (abfss://, a catalog name) | refused: replay the topic instead             |

The URL of an S3 table is `<storage.endpoint>/<bucket>/<key>` (path style) or
`https://<bucket>.<endpoint host>/<key>`, and AWS's own endpoint for the region without one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import unquote, urlsplit

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import DatabaseError

from schemas.clickhouse import quote
from schemas.errors import TerminalError
from services.storage import StorageSettings

log = logging.getLogger(__name__)
S3_SCHEMES = ("s3", "s3a", "s3n")
# What ClickHouse answers when it cannot read the table or a feature of it: NOT_IMPLEMENTED,
# FILE_DOESNT_EXIST, CANNOT_EXTRACT_TABLE_STRUCTURE, PATH_ACCESS_DENIED, S3_ERROR,
# DELTA_KERNEL_ERROR.
LAKE_CODES = frozenset({48, 107, 481, 499, 636, 742})
# Delta's history time of a commit, read from its commit file's lines.
COMMIT_TIME = (
    "coalesce(max(JSONExtract(line, 'commitInfo', 'inCommitTimestamp', 'Nullable(Int64)')), "
    "toUnixTimestamp64Milli(max(toDateTime64(_time, 3))))"
)
INTEGRAL = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")


class LakeUnreadableError(TerminalError):
    """ClickHouse cannot read the Delta table, or this feature of it; the message names the
    Kafka path."""


@dataclass(frozen=True)
class LakeTable:
    """How ClickHouse reads one Delta table (`function`) and one file of its log (`file`)."""

    location: str
    function: str  # deltaLakeLocal or deltaLake
    file_function: str  # file or s3
    root: str  # the path or URL of the table, ending in '/'
    credentials: tuple[str, ...] = ()  # names of the query parameters holding them
    parameters: dict[str, str] = field(default_factory=dict, repr=False)  # secrets: never log

    def table_sql(self) -> str:
        """The table function reading the table (the version is a query setting)."""
        return f"{self.function}({', '.join(['{lake_root:String}', *self._secrets()])})"

    def log_file_sql(self, version: int) -> str:
        """The table function reading the commit file of `version`, line by line."""
        args = ["{lake_commit:String}", *self._secrets(), "'LineAsString'"]
        return f"{self.file_function}({', '.join(args)})"

    def query_parameters(self, version: int) -> dict[str, str]:
        commit = f"{self.root}_delta_log/{version:020d}.json"
        return {"lake_root": self.root, "lake_commit": commit, **self.parameters}

    def _secrets(self) -> list[str]:
        return [f"{{{name}:String}}" for name in self.credentials]


def locate(location: str, storage: StorageSettings) -> LakeTable:
    """How ClickHouse reads the table at `location` (as the producer names it)."""
    parts = urlsplit(location)
    if location.startswith("/") or parts.scheme == "file":
        path = unquote(parts.path) if parts.scheme == "file" else location
        return LakeTable(location, "deltaLakeLocal", "file", path.rstrip("/") + "/")
    if parts.scheme in S3_SCHEMES and parts.netloc:
        root = _s3_url(parts.netloc, parts.path.strip("/"), storage)
        names, values = _s3_credentials(storage)
        return LakeTable(location, "deltaLake", "s3", root, names, values)
    raise LakeUnreadableError(
        f"ClickHouse cannot read the Delta table {location!r} itself: only local paths and "
        "s3:// or s3a:// tables are bootstrapped from the lake. Replay the topic instead "
        "(cdfbridge-consumer rebuild --from-topic), or, if its history is gone, start a new "
        "generation with cdfbridge-producer resync and rebuild from the topic; or set "
        "consumer.lake_location to where ClickHouse reads the table"
    )


def _s3_url(bucket: str, key: str, storage: StorageSettings) -> str:
    if not storage.endpoint:
        region = storage.region_or_default or "us-east-1"
        return f"https://{bucket}.s3.{region}.amazonaws.com/{key}/"
    endpoint = urlsplit(storage.endpoint)
    if storage.path_style_access:
        return f"{storage.endpoint.rstrip('/')}/{bucket}/{key}/"
    return f"{endpoint.scheme}://{bucket}.{endpoint.netloc}/{key}/"


def _s3_credentials(storage: StorageSettings) -> tuple[tuple[str, ...], dict[str, str]]:
    if storage.access_key_id is None or storage.secret_access_key is None:
        return (), {}  # ClickHouse's own: its config or the environment of its host
    values = {
        "lake_key_id": storage.access_key_id.get_secret_value(),
        "lake_secret": storage.secret_access_key.get_secret_value(),
    }
    if storage.session_token is not None:
        values["lake_token"] = storage.session_token.get_secret_value()
    return tuple(values), values


def lake_column(name: str, kind: str, hashed: bool) -> str:
    """A lake column as published: hashed as lowercase hex SHA-256 of its bytes (strings,
    binary) or of its decimal text (integers); NULL stays NULL."""
    if not hashed:
        return quote(name)
    value = (
        f"toString({quote(name)})"
        if kind.removeprefix("Nullable(").startswith(INTEGRAL)
        else quote(name)
    )
    return f"lower(hex(SHA256({value})))"


def committed_at(client: Client, lake: LakeTable, version: int) -> str:
    """commit_millis as a ClickHouse DateTime64 expression."""
    return f"fromUnixTimestamp64Milli(toInt64({commit_millis(client, lake, version)}), 'UTC')"


# A commit file that is not there reads as no lines, not as an error.
ABSENT_EMPTY = {"engine_file_empty_if_not_exists": 1, "s3_ignore_file_doesnt_exist": 1}


def commit_time(client: Client, lake: LakeTable, version: int) -> int | None:
    """The commit time of `version` (ms since the epoch, as commit_millis reads it), or
    None while the table has no commit `version`."""
    [(lines, millis)] = client.query(
        f"SELECT count(), {COMMIT_TIME} FROM {lake.log_file_sql(version)}",  # noqa: S608
        parameters=lake.query_parameters(version),
        settings=ABSENT_EMPTY,
    ).result_rows
    return int(millis) if lines else None


def commit_millis(client: Client, lake: LakeTable, version: int) -> int:
    """The commit time of `version` as Delta's history gives it: the in-commit timestamp
    when the table records one, else the commit file's modification time; now when the
    log no longer holds the commit file."""
    try:
        millis = commit_time(client, lake, version)
    except (DatabaseError, ValueError):
        millis = None
    if millis is None:
        log.warning(
            "no commit file for the version: its time is the load's", extra={"version": version}
        )
        millis = int(datetime.now(UTC).timestamp() * 1000)
    return millis
