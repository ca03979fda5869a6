"""The same commits read both ways, by Delta's change-feed reader and from the commits' own
files (producer/read/file_read.py), give the same rows and the same encoded messages: on tables of
every type the producer publishes, partitioned by every type the file read injects, through
INSERT, UPDATE, DELETE, MERGE (changing, inserting only, changing nothing), overwrite and
OPTIMIZE. Deletion vectors and column mapping are read by Delta's reader, and give the
same rows too."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from producer import metrics
from producer.encode.encode import KEY, VALUE, Encoding, WireSchema
from producer.encode.slices import ENCODED
from producer.read.source import DeltaSource
from schemas.avro import key_schema, value_schema

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COLUMNS = (
    "id BIGINT NOT NULL, b TINYINT, s SMALLINT, i INT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2), "
    "big DECIMAL(38, 18), name STRING, raw BINARY, ok BOOLEAN, day DATE, at TIMESTAMP, "
    "local TIMESTAMP_NTZ, list ARRAY<INT>, tags MAP<STRING, INT>, "
    "pair STRUCT<x: INT, y: STRING>, deep ARRAY<STRUCT<z: BIGINT>>"
)
PARTITIONS = "ps STRING, pi INT, pd DATE, pb BOOLEAN"
ROW = (
    "CAST({n} AS TINYINT), CAST({n} AS SMALLINT), {n}, {n}.5, {n}.25, {n}.01, "
    "CAST('{n}.000000000000000001' AS DECIMAL(38, 18)), 'n{n}', CAST('r{n}' AS BINARY), "
    "{n} % 2 = 0, DATE'2024-02-2{d}', TIMESTAMP'2024-01-01 00:00:0{d}.123456', "
    "TIMESTAMP_NTZ'2024-01-01 00:00:0{d}', array({n}, NULL), map('k', {n}), "
    "named_struct('x', {n}, 'y', 'y{n}'), array(named_struct('z', {n}))"
)


# Two partitions by parity (with a value Delta escapes in paths), and the NULL row's.
PARTITION = "'a b:c%d/e=f', {n} % 2, DATE'2024-01-0{p}', {n} % 2 = 0"
NULLS = 17  # every column but id
NO_CHANGE = ((10, 10), (11, 11))  # no file with a change: no rows, and no scan


def row(n: int, partitioned: bool) -> str:
    found = f"{n}, {ROW.format(n=n, d=n % 9 + 1)}"
    return f"({found}, {PARTITION.format(n=n, p=n % 2 + 1)})" if partitioned else f"({found})"


def null_row(n: int, partitioned: bool) -> str:
    return f"({n}{', NULL' * (NULLS + (4 if partitioned else 0))})"


def make(spark: Any, path: str, partitioned: bool = True, properties: str = "") -> None:
    columns = f"{COLUMNS}, {PARTITIONS}" if partitioned else COLUMNS
    by = "PARTITIONED BY (ps, pi, pd, pb)" if partitioned else ""
    spark.sql(
        f"CREATE TABLE delta.`{path}` ({columns}) USING delta {by} TBLPROPERTIES "
        f"(delta.enableChangeDataFeed = true{properties})"
    )


def history(spark: Any, path: str, partitioned: bool = True) -> None:
    """Versions 1-11, one of each kind of commit; 10 and 11 change nothing (NO_CHANGE)."""
    table = f"delta.`{path}`"
    names = ", ".join(f"`{f.name}`" for f in spark.read.format("delta").load(path).schema)
    rows = ", ".join(row(n, partitioned) for n in (2, 5, 6))
    source = f"SELECT * FROM VALUES {rows} AS src({names})"
    first = ", ".join(row(n, partitioned) for n in (1, 2, 3, 4))
    for sql in (
        f"INSERT INTO {table} VALUES {first}",  # 1: adds
        f"INSERT INTO {table} VALUES {null_row(7, partitioned)}",  # 2: nulls everywhere
        f"UPDATE {table} SET name = 'updated', list = array(9) WHERE id = 1",  # 3: cdc files
        f"DELETE FROM {table} WHERE id = 3",  # 4: cdc files, or a file removed
        f"MERGE INTO {table} t USING ({source}) s ON t.id = s.id "  # 5: cdc files
        "WHEN MATCHED AND s.id = 2 THEN DELETE WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *",
        f"MERGE INTO {table} t USING (SELECT 8 AS id) s ON t.id = s.id "  # 6: adds only
        "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, 'merged')",
        f"INSERT OVERWRITE {table} SELECT * FROM {table} WHERE id <> 4",  # 7: adds, removes
        f"INSERT INTO {table} VALUES {row(9, partitioned)}",  # 8: adds
        f"INSERT INTO {table} VALUES {row(11, partitioned)}",  # 9: adds
    ):
        spark.sql(sql)
    no_op_merge(path, 10)
    spark.sql(f"OPTIMIZE {table}")  # 11: files compacted, no data changed


def no_op_merge(path: str, version: int) -> None:
    """A MERGE that rewrote the file of the version before and changed no row, as Delta
    once wrote them: its files say insert and delete, its metrics say nothing changed, and
    Delta's reader gives no change for it."""
    log = Path(path) / "_delta_log"
    before = (log / f"{version - 1:020d}.json").read_text().splitlines()
    actions = [json.loads(line) for line in before if line]
    add = next(a["add"] for a in actions if "add" in a)
    last = next(a["commitInfo"] for a in actions if "commitInfo" in a).get("inCommitTimestamp")
    folder, name = add["path"].rsplit("/", 1) if "/" in add["path"] else ("", add["path"])
    copy = f"{folder}/copy-{name}".lstrip("/")
    shutil.copy(Path(path) / unquote(add["path"]), Path(path) / unquote(copy))
    stamp = int(time.time() * 1000)
    zero = {f"numTargetRows{m}": "0" for m in ("Inserted", "Updated", "Deleted")}
    info = {"timestamp": stamp, "operation": "MERGE", "operationMetrics": zero}
    if last is not None:  # in-commit timestamps: each commit carries one, and they increase
        info["inCommitTimestamp"] = max(stamp, last + 1)
    gone = {"path": add["path"], "deletionTimestamp": stamp, "dataChange": True}
    gone |= {"extendedFileMetadata": True, "partitionValues": add["partitionValues"]}
    actions = [
        {"commitInfo": info},
        {"remove": {**gone, "size": add["size"]}},
        {"add": {**add, "path": copy, "modificationTime": stamp}},
    ]
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def both_ways(
    spark: Any, path: str, first: int, last: int, fresh: bool = False
) -> tuple[Any, Any, bool]:
    """first..last read by Delta's reader and by the file read, and whether the files were
    read. Each source first reads version 0, as a follow's later reads find the snapshot
    of one before; fresh: the file read's is a source that read nothing before (a start's
    first read, no cached state), but the commit files from first to the head, as a
    start's first poll reads them."""
    delta, files = DeltaSource(spark, path, False), DeltaSource(spark, path)
    for source in (delta,) if fresh else (delta, files):
        source.row_estimates(0, last, last)  # as a start does: the commit files read
        source.changes(0, 0)
    if fresh:
        files.head(first - 1)
    before = _file_reads()
    read = files.changes(first, last)
    return delta.changes(first, last), read, _file_reads() > before


def scans(frame: Any) -> int:
    """The Parquet scans frame's plan holds."""
    return str(frame._jdf.queryExecution().executedPlan().toString()).count("FileScan parquet")


def encoded(spark: Any, path: str, frame: Any) -> Any:
    """frame encoded as the producer encodes it, as Arrow."""
    schema = spark.read.format("delta").load(path).schema.jsonValue()
    key, value = key_schema(schema, ["id"], "t"), value_schema(schema, "t", ["id"])
    encoding = Encoding(WireSchema(key, 1), WireSchema(value, 2), ["id"], include_preimage=True)
    return encoding.encode(frame).toArrow()


def fields(schema: Any) -> list[tuple[str, Any]]:
    return [(field.name, field.type) for field in schema]


def assert_same(
    spark: Any, path: str, by_delta: Any, by_files: Any, version: int | None = None
) -> None:
    """Equal rows, and equal key and value bytes once encoded as the producer does, with
    the schema at version (else the latest)."""
    assert [f.name for f in by_files.schema] == [f.name for f in by_delta.schema]
    assert [f.dataType for f in by_files.schema] == [f.dataType for f in by_delta.schema]
    assert _sorted(by_files) == _sorted(by_delta)
    reader = spark.read.format("delta")
    at = reader if version is None else reader.option("versionAsOf", version)
    schema = at.load(path).schema.jsonValue()
    key, value = key_schema(schema, ["id"], "t"), value_schema(schema, "t", ["id"])
    encoding = Encoding(WireSchema(key, 1), WireSchema(value, 2), ["id"], include_preimage=True)
    assert _sorted(encoding.encode(by_files).select(KEY, VALUE)) == _sorted(
        encoding.encode(by_delta).select(KEY, VALUE)
    )


@pytest.mark.parametrize(
    ("partitioned", "properties"),
    [(True, ""), (False, ", delta.enableInCommitTimestamps = true")],
    ids=["partitioned", "unpartitioned-in-commit-timestamps"],
)
def test_every_kind_of_commit_reads_the_same_from_its_files(
    spark: Any, tmp_path: Path, partitioned: bool, properties: str
) -> None:
    path = str(tmp_path / "t")
    make(spark, path, partitioned, f", delta.enableDeletionVectors = false{properties}")
    history(spark, path, partitioned)

    for first, last in [*((v, v) for v in range(1, 12)), (1, 11), (3, 10)]:
        for fresh in (False, True):
            by_delta, by_files, from_files = both_ways(spark, path, first, last, fresh)
            assert from_files, (first, last, fresh)
            assert_same(spark, path, by_delta, by_files)
            if (first, last) in NO_CHANGE:
                assert by_delta.count() == 0 and scans(by_files) == 0
                spark_empty = encoded(spark, path, by_delta).schema  # a chunk of none, as read
                assert fields(spark_empty) == fields(ENCODED)
    kinds = {r[0] for r in by_delta.select("_change_type").distinct().collect()}  # (3, 10)
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}
    assert scans(both_ways(spark, path, 1, 6)[1]) == 1  # every version, kind and partition
    assert scans(both_ways(spark, path, 1, 9)[1]) == 2  # and the files 7 removes, added before


def test_a_first_read_before_a_later_schema_change_keeps_its_own_schema(
    spark: Any, tmp_path: Path
) -> None:
    """A start's first read that ends before the head is read in the head's snapshot only
    when no commit after it changes the table: with a column added after it, in its own."""
    path = str(tmp_path / "t")
    make(spark, path, False, ", delta.enableDeletionVectors = false")
    history(spark, path, False)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (added STRING)")  # 12
    spark.sql(f"INSERT INTO delta.`{path}` (id, name, added) VALUES (20, 'late', 'x')")  # 13

    for first, last in [(1, 9), (8, 8), (12, 13), (13, 13)]:
        by_delta, by_files, from_files = both_ways(spark, path, first, last, fresh=True)
        assert from_files, (first, last)
        assert ("added" in by_files.columns) == (last >= 12), (first, last)
        assert_same(spark, path, by_delta, by_files, last)


def test_a_span_of_a_hundred_versions_is_one_scan_and_reads_the_same(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    make(spark, path, properties=", delta.enableDeletionVectors = false")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {row(1, True)}, {row(2, True)}")
    for n in range(3, 102):  # versions 2-100: one file of a partition each
        spark.sql(f"INSERT INTO delta.`{path}` VALUES {row(n, True)}")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")  # 101: cdc files

    for first, last, fresh in [(1, 100, True), (2, 101, False), (2, 101, True)]:
        by_delta, by_files, from_files = both_ways(spark, path, first, last, fresh=fresh)
        assert from_files, (first, last)
        assert scans(by_files) == 1
        assert_same(spark, path, by_delta, by_files)


def test_deletion_vectors_are_read_by_deltas_reader_alike(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    make(spark, path, properties=", delta.enableDeletionVectors = true")
    history(spark, path)
    table = f"delta.`{path}`"
    spark.sql(f"DELETE FROM {table} WHERE id = 5")  # 12: a remove and re-add with a vector
    spark.sql(f"INSERT INTO {table} VALUES {row(10, True)}")  # 13

    by_delta, by_files, from_files = both_ways(spark, path, 12, 12)
    assert not from_files
    assert_same(spark, path, by_delta, by_files)
    by_delta, by_files, from_files = both_ways(spark, path, 9, 13)
    assert not from_files  # one commit of the range needs Delta's reader: all of it does
    assert_same(spark, path, by_delta, by_files)
    by_delta, by_files, from_files = both_ways(spark, path, 13, 13)
    assert from_files
    assert_same(spark, path, by_delta, by_files)


def test_column_mapped_tables_are_read_by_deltas_reader(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    mapping = ", delta.columnMapping.mode = 'name', delta.enableDeletionVectors = false"
    make(spark, path, partitioned=False, properties=mapping)
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {row(1, False)}")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {row(2, False)}")

    by_delta, by_files, from_files = both_ways(spark, path, 2, 2)
    assert not from_files
    assert _sorted(by_files) == _sorted(by_delta)


def test_a_catalog_table_is_read_through_deltas_public_api_and_counted_so(spark: Any) -> None:
    """No commit files to read for a catalog name: every read is Delta's public reader's,
    counted as `public`, so a lake that reads that way is seen on the metric."""
    name = f"default.public_{time.monotonic_ns()}"
    cdf = "delta.enableChangeDataFeed = true"
    spark.sql(f"CREATE TABLE {name} (id BIGINT) USING delta TBLPROPERTIES ({cdf})")
    try:
        spark.sql(f"INSERT INTO {name} VALUES (1), (2)")
        public = _reads("public")

        rows = DeltaSource(spark, name).changes(1, 1).count()

        assert rows == 2
        assert _reads("public") == public + 1
    finally:
        spark.sql(f"DROP TABLE {name}")


def _file_reads() -> float:
    return _reads("files")


def _reads(reader: str) -> float:
    return float(metrics.READS.labels(reader)._value.get())


def _sorted(frame: Any) -> list[str]:
    return sorted(repr(r) for r in frame.collect())
