"""A path table's head as Kernel loads it (producer/follow/log_state.py) against Delta's
DeltaLog, the reference: the same version, protocol and metadata, the same schema as
Delta's read gives at the head and before, and the same latest version by the log's
listing. Tables of every kind a lake holds: written by Spark (with checksum files) and by
delta-rs (without, a checkpoint every 10 commits), partitioned, with comments and NOT NULL
columns, a column added, generated and identity columns, mapped columns, deletion vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from producer.follow.log_state import load_head
from producer.read.file_read import actions_of
from producer.read.source import DeltaSource
from stack.generate import Generator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CDF = "delta.enableChangeDataFeed = true"


def spark_table(spark: Any, path: str, columns: str, properties: str = "", more: str = "") -> None:
    spark.sql(
        f"CREATE TABLE delta.`{path}` ({columns}) USING delta {more} "
        f"TBLPROPERTIES ({CDF}{properties})"
    )


def written(spark: Any, tmp_path: Path, kind: str) -> tuple[str, int]:
    """A table of kind, and a version before its last schema change (or its first)."""
    path = str(tmp_path / kind)
    if kind == "delta-rs":
        generator = Generator(path, seed=1, checkpoint_interval=10)
        for _ in range(24):
            generator.commit("insert", 20)
        return path, 3
    if kind == "comments-not-null-partitioned":
        spark_table(
            spark,
            path,
            "id BIGINT NOT NULL COMMENT 'the key', name STRING COMMENT 'a name', d DATE",
            more="PARTITIONED BY (d)",
        )
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a', DATE'2026-01-01')")
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (score DOUBLE)")
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (2, 'b', DATE'2026-01-02', 1.5)")
        return path, 1
    if kind == "generated-identity":
        spark_table(
            spark,
            path,
            "id BIGINT GENERATED ALWAYS AS IDENTITY, x INT, y INT GENERATED ALWAYS AS (x * 2)",
        )
        spark.sql(f"INSERT INTO delta.`{path}` (x) VALUES (1), (2)")
        return path, 0
    if kind == "column-mapping":
        mapping = ", delta.columnMapping.mode = 'name'"
        spark_table(spark, path, "id BIGINT, name STRING", mapping)
        spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a')")
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN name TO title")
        return path, 1
    spark_table(spark, path, "id BIGINT, name STRING", ", delta.enableDeletionVectors = true")
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    return path, 1


KINDS = (
    "delta-rs",
    "comments-not-null-partitioned",
    "generated-identity",
    "column-mapping",
    "deletion-vectors",
)


@pytest.mark.parametrize("kind", KINDS)
def test_kernel_loads_the_head_delta_loads(spark: Any, tmp_path: Path, kind: str) -> None:
    from delta.tables import DeltaTable

    path, before = written(spark, tmp_path, kind)
    loaded = load_head(spark, path)
    assert loaded is not None
    state = loaded[1]
    none = spark._jvm.scala.Option.empty()
    snapshot = DeltaTable.forPath(spark, path)._jdt.deltaLog().update(False, none, none)
    protocol, metadata = actions_of(snapshot)

    assert state.version == int(snapshot.version())
    for field in ("minReaderVersion", "minWriterVersion"):
        assert state.protocol[field] == protocol[field]
    for field in ("readerFeatures", "writerFeatures"):
        assert state.protocol[field] == sorted(protocol.get(field) or [])
    for field in ("id", "schemaString", "partitionColumns"):
        assert state.metadata[field] == metadata[field], field
    assert state.configuration == (metadata.get("configuration") or {})


@pytest.mark.parametrize("kind", KINDS)
def test_a_source_opened_by_kernel_gives_delta_s_schemas_and_head(
    spark: Any, tmp_path: Path, kind: str
) -> None:
    path, before = written(spark, tmp_path, kind)
    source = DeltaSource(spark, path)
    head = source.head(before)  # as a start polls: the commit files after `before` read
    source.row_estimates(0, head, head)

    reader = spark.read.format("delta")
    for version in (before, head):
        expected = reader.option("versionAsOf", version).load(path).schema.jsonValue()
        assert source.schema_json(version) == expected, version
    assert (
        source.latest_version()
        == head
        == int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()["version"])
    )
    assert source.table_id == str(spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["id"])
    source.check_change_feed()


def test_a_first_read_from_its_files_loads_no_delta_log(spark: Any, tmp_path: Path) -> None:
    """A start's first read of a delta-rs table (no checksum files) by its commits' files:
    Kernel's head holds for it, and no DeltaLog (whose load runs a Spark job) is built."""
    path, _ = written(spark, tmp_path, "delta-rs")
    source = DeltaSource(spark, path)
    head = source.head(0)
    source.row_estimates(1, head, head)
    source.schema_json(head)

    rows = source.changes(1, head).count()

    by_delta = spark.read.format("delta").option("readChangeFeed", "true")
    assert rows == by_delta.option("startingVersion", 1).load(path).count() > 0
    assert source.file_plan(1, head) is not None
    assert source._opened is None  # Delta's DeltaTable was never opened
