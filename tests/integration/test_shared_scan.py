"""Reads of tables of one shape share one Parquet scan in a cycle (producer/read/shared.py):
each table gets the rows, framed with its own schema ids and generation, that its own read
encodes; a table of another shape reads alone beside them."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from producer.encode.encode import KEY, ORDER, VALUE, Encoding, WireSchema
from producer.read.cycle import Cycle
from producer.read.shared import PLACE, Sharing, shared
from producer.read.source import DeltaSource
from schemas.avro import key_schema, value_schema
from tests.integration.test_file_read import scans

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SHAPE = "id BIGINT NOT NULL, name STRING, score DOUBLE, day DATE"


def _table(spark: Any, path: str, columns: str, partitioned: bool, n: int) -> int:
    """A table with an insert, then an update (cdc files): its last version."""
    by = "PARTITIONED BY (day)" if partitioned else ""
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} ({columns}) USING delta {by} TBLPROPERTIES "
        "(delta.enableChangeDataFeed = true, delta.enableDeletionVectors = false)"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('n', id), id * 1.5, DATE'2024-01-01' + CAST(id % 2 AS INT)"
        f"{', id % 3 = 0' if 'flag' in columns else ''} FROM range({n * 10}, {n * 10 + 6})"
    )
    spark.sql(f"UPDATE {table} SET name = 'changed' WHERE id % 2 = 0")
    return 2


def _read(spark: Any, path: str, version: int, number: int) -> tuple[Any, Sharing]:
    """The table's last commit read from its files, and how it would share a scan: its
    schemas registered under ids of its own and a generation of its own."""
    source = DeltaSource(spark, path)
    source.row_estimates(0, version, version)
    frame = source.changes(version, version)
    plan = source.file_plan(version, version)
    assert plan is not None
    schema = spark.read.format("delta").load(path).schema.jsonValue()
    name = f"t{number}"
    key = WireSchema(key_schema(schema, ["id"], name), 100 + number)
    value = WireSchema(value_schema(schema, name, ["id"]), 200 + number)
    encoding = Encoding(key, value, ["id"], include_preimage=False, generation=number)
    return frame, Sharing(plan, encoding)


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    picked = table.select([KEY, VALUE, ORDER]).to_pylist()
    return sorted(tuple(r.values()) for r in picked)


def test_tables_of_one_shape_share_one_scan_and_each_gets_its_own_rows(
    spark: Any, tmp_path: Path
) -> None:
    reads = []
    for number in range(3):
        path = str(tmp_path / f"t{number}")
        reads.append(_read(spark, path, _table(spark, path, SHAPE, True, number), number))
    assert len({sharing.key() for _, sharing in reads}) == 1

    together = shared(spark, [(str(i), sharing) for i, (_, sharing) in enumerate(reads)])

    assert together is not None
    assert scans(together) == 1
    rows = together.toArrow()
    places = rows.column(PLACE)
    for i, (frame, sharing) in enumerate(reads):
        alone = sharing.encoding.encode(frame).toArrow()
        mine = rows.filter(pc.equal(places, str(i)))
        assert len(alone) == 6  # three keys updated: a preimage and a postimage each
        assert _rows(mine) == _rows(alone)
        assert {bytes(v)[:5] for v in mine.column(VALUE).to_pylist()} == {
            b"\x00" + (200 + i).to_bytes(4, "big")
        }


def test_a_cycle_reads_a_table_of_another_shape_alone_beside_the_shared_scan(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "cdfbridge.producer")
    reads = []
    for number, columns in enumerate([SHAPE, SHAPE, f"{SHAPE}, flag BOOLEAN"]):
        path = str(tmp_path / f"t{number}")
        reads.append(_read(spark, path, _table(spark, path, columns, False, number), number))
    assert reads[0][1].key() == reads[1][1].key() != reads[2][1].key()
    cycle = Cycle(spark, 2**30)
    for i in range(len(reads)):
        cycle.at_head(i, True)
    found: dict[int, pa.Table] = {}

    def collect(i: int) -> None:
        frame, sharing = reads[i]
        found[i] = cycle.collect(lambda: sharing.encoding.encode(frame), 1, sharing=sharing)

    threads = [threading.Thread(target=collect, args=(i,)) for i in range(len(reads))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    cycle.close()

    for i, (frame, sharing) in enumerate(reads):
        assert _rows(found[i]) == _rows(sharing.encoding.encode(frame).toArrow())
    events = [json.loads(r.message) for r in caplog.records if "cycle_scans" in r.message]
    assert [(e["shared"], e["alone"]) for e in events] == [(1, 1)]


def test_the_next_cycle_of_the_same_tables_compiles_no_new_code(spark: Any, tmp_path: Path) -> None:
    """Each cycle's versions, times and partition values are new: had they been written into
    the code Spark generates, every cycle would compile its own (CodegenMetrics counts)."""
    paths = [str(tmp_path / f"t{number}") for number in range(2)]
    versions = [_table(spark, path, SHAPE, True, n) for n, path in enumerate(paths)]
    compiled = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()

    def cycle() -> int:
        reads = [
            _read(spark, p, v, n) for n, (p, v) in enumerate(zip(paths, versions, strict=True))
        ]
        together = shared(spark, [(str(i), sharing) for i, (_, sharing) in enumerate(reads)])
        assert together is not None
        before = compiled.getCount()
        assert together.toArrow().num_rows == 12
        return int(compiled.getCount() - before)

    cycle()  # the shape's first job compiles its code
    for n, path in enumerate(paths):  # new versions, a new day's partition, new times
        spark.sql(
            f"UPDATE delta.`{path}` SET name = 'again', day = DATE'2025-06-0{n + 1}' WHERE id % 2 = 0"
        )
    versions = [v + 1 for v in versions]

    assert cycle() == 0
