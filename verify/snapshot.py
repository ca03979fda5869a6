"""The Delta table's state at one version, copied into a ClickHouse staging table so that
both sides are compared in the same column types."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError, TableNotFoundError

from consumer.table import Target
from schemas.clickhouse import quote
from verify.errors import NothingToCompareError

BATCH_ROWS = 256 * 1024  # per insert: bounded memory whatever the table's size


def open_version(uri: str, version: int, storage_options: Mapping[str, str]) -> ds.Dataset:
    """The table's state at `version`, as an Arrow dataset read file by file."""
    try:
        table = DeltaTable(uri, version=version, storage_options=dict(storage_options) or None)
        return table.to_pyarrow_dataset()
    except TableNotFoundError as exc:
        raise NothingToCompareError(
            f"no Delta table at {uri}: pass the path or URI the producer reads (--table)"
        ) from exc
    except DeltaError as exc:
        raise NothingToCompareError(
            f"Delta table {uri} cannot be read at version {version} ({exc}); if its history was "
            "vacuumed, compare a newer version with --version"
        ) from exc
    except OSError as exc:  # delta-rs's object-store failures carry no code, only their text
        raise NothingToCompareError(
            f"Delta table {uri} cannot be read from its object store ({_oneline(exc)}); check "
            "[storage] endpoint, region and keys (CDFBRIDGE_STORAGE__*, or --storage-option) "
            "and that the bucket exists"
        ) from exc


def _oneline(exc: OSError, limit: int = 400) -> str:
    """delta-rs's multi-line, coloured error as one plain line."""
    text = re.sub(r"\x1b\[[0-9;]*m|[↳]", " ", str(exc))
    return " ".join(text.split())[:limit]


def stage(
    client: Any, staging: Target, columns: Sequence[tuple[str, str]], dataset: ds.Dataset
) -> int:
    """(Re)create `staging` with the target's column types and fill it; returns rows copied."""
    definition = ", ".join(f"{quote(name)} {kind}" for name, kind in columns)
    client.command(f"DROP TABLE IF EXISTS {staging.name}")
    client.command(f"CREATE TABLE {staging.name} ({definition}) ENGINE = MergeTree ORDER BY ()")
    rows = 0
    names = [name for name, _ in columns]
    for batch in dataset.to_batches(columns=names, batch_size=BATCH_ROWS):
        if batch.num_rows:
            # ClickHouse converts the Arrow types to the column types, as it does for Avro.
            client.insert_arrow(staging.table, pa.Table.from_batches([batch]), staging.database)
            rows += batch.num_rows
    return rows
