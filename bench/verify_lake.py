"""The bench's lake and replicas for bench/verify_asof.py: a narrow Delta table written
once by delta-rs and kept, and its replica loaded by ClickHouse from it, as a bootstrap
loads one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import write_deltalake

from consumer.tables.table import create_table_sql
from schemas.target import Target

LAKE = Path("/tmp/cdfbridge-bench/verify")  # noqa: S108 - a bench's scratch space
COLUMNS = [("id", "Int64"), ("name", "String"), ("n", "Int64")]
META = [
    ("_change_type", "String"),
    ("_commit_version", "Int64"),
    ("_commit_timestamp", "DateTime64(6, 'UTC')"),
]
BATCH = 1_000_000


def lake_table(rows: int, name: str) -> str:
    """A Delta table of `rows` rows at version 0, written once and kept."""
    path = LAKE / f"{name}_{rows}"
    if not (path / "_delta_log").exists():
        batches = (_batch(start, min(rows, start + BATCH)) for start in range(0, rows, BATCH))
        schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("n", pa.int64())])
        write_deltalake(str(path), pa.RecordBatchReader.from_batches(schema, batches))
    return str(path)


def _batch(start: int, stop: int) -> pa.RecordBatch:
    ids = pa.array(range(start, stop), pa.int64())
    names = pc.binary_join_element_wise("name-", pc.cast(ids, pa.string()), "")
    return pa.record_batch([ids, names, pc.remainder(ids, 1000)], ["id", "name", "n"])


def replica(client: Any, database: str, name: str, path: str) -> None:
    """The replica, loaded by ClickHouse from the lake at version 0."""
    target = Target(database, name)
    client.command(create_table_sql(target, COLUMNS + META, ["id"], 100))
    client.command(
        f"INSERT INTO {target.name} (id, name, n, _change_type, _commit_version, "  # noqa: S608
        f"_commit_timestamp) SELECT id, name, n, 'snapshot', 0, now64() "
        f"FROM deltaLakeLocal({{path:String}})",
        parameters={"path": path},
    )
