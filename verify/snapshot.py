"""The Delta table's state at one version, copied into a ClickHouse staging table so that
both sides are compared in the same column types.

delta-rs opens the table and its protocol decides the reader (routes.py): delta-rs's pyarrow
dataset, its DataFusion scan (deletion vectors, column mapping), or Spark.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaError, TableNotFoundError

from schemas.target import Target
from verify import hashed, routes
from verify.errors import NothingToCompareError
from verify.routes import VACUUMED, Route, Snapshot
from verify.settings import VerifySettings

log = logging.getLogger(__name__)
BATCH_ROWS = 256 * 1024  # per insert: bounded memory whatever the table's size


def open_version(settings: VerifySettings, version: int) -> Snapshot:
    """The table's state at `version`, read by the route its protocol calls for."""
    uri = settings.verify.table
    table = _open(uri, version, settings.storage_options)
    protocol = table.protocol()
    reader_version, features = protocol.min_reader_version, protocol.reader_features
    route = routes.choose(reader_version, features, settings.verify.reader)
    log.info("%s at version %d: %s", uri, version, routes.why(reader_version, features, route))
    if route is Route.SPARK:
        from verify.spark_snapshot import open_with_spark

        return open_with_spark(settings, version)
    names = [field.name for field in table.schema().fields]
    schema = json.loads(table.schema().to_json())
    if route is Route.DATAFUSION:
        return Snapshot(route, names, lambda c: _scan(table, uri, version, c), schema)
    try:
        dataset = table.to_pyarrow_dataset()
    except DeltaError as exc:
        raise NothingToCompareError(f"Delta table {uri} cannot be read ({exc})") from exc

    def files(columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        return _guarded(
            uri, version, dataset.to_batches(columns=list(columns), batch_size=BATCH_ROWS)
        )

    return Snapshot(route, names, files, schema)


def latest_version(settings: VerifySettings) -> int:
    """The table's latest version, from its log."""
    s = settings.verify
    return int(_open(s.table, None, settings.storage_options).version())


def commit_after(settings: VerifySettings, version: int) -> int | None:
    """The commit time (ms since the epoch) of the commit after `version`, from the log's
    history; None while `version` is the table's latest."""
    s = settings.verify
    table = _open(s.table, None, settings.storage_options)
    latest = int(table.version())
    if latest <= version:
        return None
    found = {int(c["version"]): c.get("timestamp") for c in table.history(latest - version)}
    millis = found.get(version + 1)
    return int(millis) if millis is not None else int(time.time() * 1000)


def _open(uri: str, version: int | None, storage_options: Mapping[str, str]) -> DeltaTable:
    try:
        return DeltaTable(uri, version=version, storage_options=dict(storage_options) or None)
    except TableNotFoundError as exc:
        raise NothingToCompareError(
            f"no Delta table at {uri}: pass the path or URI the producer reads (--table)"
        ) from exc
    except DeltaError as exc:
        raise NothingToCompareError(
            f"Delta table {uri} cannot be read at {_at(version)} ({exc}); {VACUUMED}; if "
            "delta-rs does not support one of its features, read it with Spark: --reader spark"
        ) from exc
    except OSError as exc:  # delta-rs's object-store failures carry no code, only their text
        raise NothingToCompareError(
            f"Delta table {uri} cannot be read from its object store ({_oneline(exc)}); check "
            "[storage] endpoint, region and keys (CDFBRIDGE_STORAGE__*, or --storage-option) "
            "and that the bucket exists"
        ) from exc


def _scan(
    table: DeltaTable, uri: str, version: int, columns: Sequence[str]
) -> Iterator[pa.RecordBatch]:
    """DataFusion's scan, which applies deletion vectors and column mapping, in the types
    the pyarrow reader gives (it would hand out string and binary views)."""
    schema = pa.schema(table.schema().to_arrow())
    wanted = pa.schema([schema.field(name) for name in columns])
    listed = ", ".join('"' + name.replace('"', '""') + '"' for name in columns)
    query = f"SELECT {listed} FROM snapshot"  # noqa: S608 - quoted names
    stream = QueryBuilder().register("snapshot", table).execute(query)
    for batch in _guarded(uri, version, pa.RecordBatchReader.from_stream(stream)):
        yield batch.cast(wanted)


def _guarded(uri: str, version: int, batches: Any) -> Iterator[pa.RecordBatch]:
    """batches, with a file that cannot be read named as such rather than as a traceback."""
    try:
        yield from batches
    except (OSError, DeltaError, pa.ArrowException) as exc:
        raise NothingToCompareError(
            f"Delta table {uri} cannot be read at version {version} ({_oneline(exc)}); {VACUUMED}"
        ) from exc


def _oneline(exc: Exception, limit: int = 400) -> str:
    """delta-rs's multi-line, coloured error as one plain line."""
    text = re.sub(r"\x1b\[[0-9;]*m|[↳]", " ", str(exc))
    return " ".join(text.split())[:limit]


def stage(
    client: Any,
    staging: Target,
    columns: Sequence[tuple[str, str]],
    delta: Snapshot,
    hashes: hashed.Hashed | None = None,
) -> int:
    """(Re)create `staging` with the target's column types and fill it, the `hashes` columns
    hashed as the producer hashes them (verify/hashed.py); returns rows copied."""
    hashes = hashes or {}
    definition = ", ".join(hashed.definition(name, kind, hashes) for name, kind in columns)
    client.command(f"DROP TABLE IF EXISTS {staging.name}")
    client.command(f"CREATE TABLE {staging.name} ({definition}) ENGINE = MergeTree ORDER BY ()")
    rows = 0
    for block in _blocks(delta.batches([name for name, _ in columns])):
        # ClickHouse converts the Arrow types to the column types, as it does for Avro.
        client.insert_arrow(staging.table, hashed.raw(block, hashes), staging.database)
        rows += block.num_rows
    return rows


def _blocks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """Batches gathered into inserts of about BATCH_ROWS rows (readers hand out 8k-row ones)."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows:
            pending.append(batch)
            count += batch.num_rows
        if count >= BATCH_ROWS:
            yield pa.Table.from_batches(pending)
            pending, count = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def _at(version: int | None) -> str:
    return "its latest version" if version is None else f"version {version}"
