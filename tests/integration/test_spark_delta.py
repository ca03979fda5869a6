"""Spark with the Delta jars: a CDF-enabled table records every kind of change."""

from typing import Any

import pytest

from tests.producer_helpers import change_every_way

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_change_data_feed_records_insert_update_delete_and_merge(
    spark: Any, delta_path: str
) -> None:
    change_every_way(spark, delta_path)

    changes = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(delta_path)
        .select("id", "age", "_change_type", "_commit_version")
        .orderBy("_commit_version", "id", "_change_type")
        .collect()
    )

    assert [tuple(r) for r in changes] == [
        ("1", 30, "insert", 1),
        ("2", 40, "insert", 1),
        ("3", 50, "insert", 1),
        ("1", 31, "update_postimage", 2),
        ("1", 30, "update_preimage", 2),
        ("2", 40, "delete", 3),
        ("3", 51, "update_postimage", 4),
        ("3", 50, "update_preimage", 4),
        ("4", 20, "insert", 4),
    ]


def test_to_avro_encodes_rows_in_the_jvm(spark: Any) -> None:
    from pyspark.sql.avro.functions import from_avro, to_avro
    from pyspark.sql.functions import struct

    schema = (
        '{"type":"record","name":"r","fields":[{"name":"id","type":"string"},'
        '{"name":"age","type":"long"}]}'
    )
    frame = spark.createDataFrame([("a", 1), ("b", 2)], "id STRING, age LONG")

    encoded = frame.select(to_avro(struct("id", "age"), schema).alias("v"))
    decoded = encoded.select(from_avro("v", schema).alias("r")).select("r.*").collect()

    assert [tuple(r) for r in decoded] == [("a", 1), ("b", 2)]


def test_row_estimates_from_commit_files_equal_those_of_the_history(
    spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from producer.read import source as source_module
    from producer.read.source import DeltaSource
    from stack.generate import Generator

    path = str(tmp_path / "t")
    generator = Generator(path, seed=3)
    last = max(generator.commit(op, 50) for op in ("insert", "update", "delete", "merge"))
    source = DeltaSource(spark, path)

    from_files = source.row_estimates(0, last, last)  # a short span: its commit files
    monkeypatch.setattr(source_module, "COMMIT_FILES_READ", 0)
    from_history = source.row_estimates(0, last, last)

    assert from_files == from_history
    assert len(from_files) == last + 1 and all(n is not None for n in from_files.values())
