"""Tables with deletion vectors, as Spark writes them (Databricks turns them on by default):
the producer's Change Data Feed read applies them, and cdfbridge-verify reads the snapshot
through delta-rs's DataFusion scan, or through Spark when asked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_object_storage import run_verify
from tests.integration.test_verify import NULLS, ROW, TYPES, replicate
from verify.check import verify
from verify.routes import Route
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DELETION_VECTORS = "delta.enableChangeDataFeed = true, delta.enableDeletionVectors = true"


def deletion_vectors(path: str) -> int:
    """How many files of the table's log carry a deletion vector when added."""
    commits = sorted(Path(path, "_delta_log").glob("*.json"))
    actions = [json.loads(line) for commit in commits for line in commit.read_text().splitlines()]
    return sum(1 for a in actions if a.get("add", {}).get("deletionVector"))


def write_with_deletion_vectors(spark: Any, path: str) -> None:
    """Every type in one file of 8 rows, then an update, a delete and a merge that Delta
    records as deletion vectors on that file instead of rewriting it."""
    table = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {table} ({TYPES}) USING delta TBLPROPERTIES ({DELETION_VECTORS})")
    rows = [ROW.format(id=i) for i in range(7)] + [NULLS.format(id="n")]
    spark.sql(f"INSERT INTO {table} SELECT /*+ COALESCE(1) */ * FROM VALUES {', '.join(rows)}")
    spark.sql(f"UPDATE {table} SET f = 2.5, m = map('c', 3.0, 'a', 1.0) WHERE id = '1'")
    spark.sql(f"DELETE FROM {table} WHERE id IN ('2', 'n')")
    spark.sql(
        f"MERGE INTO {table} t USING (SELECT * FROM {table} WHERE id IN ('3', '4')) s "
        "ON t.id = s.id WHEN MATCHED AND s.id = '3' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.arr = array(7)"
    )


@pytest.fixture(scope="module")
def replicated(
    spark: Any, endpoints: Endpoints, clickhouse: Any, tmp_path_factory: Any
) -> Iterator[VerifySettings]:
    """The table, published, consumed into a database of its own; checker settings."""
    path = str(tmp_path_factory.mktemp("dv") / "types")
    write_with_deletion_vectors(spark, path)
    database = unique("test")
    clickhouse.command(f"CREATE DATABASE `{database}`")
    yield replicate(spark, endpoints, path, database)
    clickhouse.command(f"DROP DATABASE IF EXISTS `{database}` SYNC")


def with_reader(settings: VerifySettings, reader: str) -> VerifySettings:
    return settings.model_copy(
        update={"verify": settings.verify.model_copy(update={"reader": reader})}
    )


def test_spark_records_the_update_delete_and_merge_as_deletion_vectors(
    replicated: VerifySettings,
) -> None:
    assert deletion_vectors(replicated.verify.table) >= 3


def test_clickhouse_holds_what_spark_reads_from_the_deletion_vector_table(
    replicated: VerifySettings, spark: Any, clickhouse: Any
) -> None:
    columns = "id, f, arr"
    expected = spark.sql(f"SELECT {columns} FROM delta.`{replicated.verify.table}`").collect()
    current = f"`{replicated.clickhouse.database}`.`{replicated.verify.target_table}_current`"

    rows = clickhouse.query(f"SELECT {columns} FROM {current}").result_rows

    assert sorted(rows) == sorted(tuple(r) for r in expected)
    assert sorted(r[0] for r in rows) == ["0", "1", "4", "5", "6"]


@pytest.mark.parametrize(("reader", "route"), [("auto", Route.DATAFUSION), ("spark", Route.SPARK)])
def test_verify_reads_the_deletion_vector_table_equal_through_each_reader(
    replicated: VerifySettings, reader: str, route: Route, caplog: Any
) -> None:
    caplog.set_level("INFO", logger="verify.snapshot")

    report = verify(with_reader(replicated, reader))

    assert report.equal, report.render()
    assert (report.delta.rows, report.clickhouse.rows) == (5, 5)
    assert f"read with {route}" in caplog.text


def test_the_verify_command_names_the_reader_it_chose(
    replicated: VerifySettings, endpoints: Endpoints
) -> None:
    s = replicated.verify
    done = run_verify(
        endpoints, None, replicated.clickhouse.database, "--table", s.table, "--topic", s.topic
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "reader features deletionVectors" in done.stderr
    assert "read with delta-rs (DataFusion)" in done.stderr
    assert done.stdout.rstrip().endswith("equal")


def test_the_spark_reader_without_the_delta_jars_names_them_with_exit_2(
    replicated: VerifySettings, endpoints: Endpoints, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("CDFBRIDGE_SPARK__JARS_DIR", str(tmp_path))  # no jars in it
    s = replicated.verify
    done = run_verify(
        endpoints,
        None,
        replicated.clickhouse.database,
        "--table",
        s.table,
        "--topic",
        s.topic,
        "--reader",
        "spark",
    )

    assert done.returncode == 2, done.stdout + done.stderr
    assert "cdfbridge-stack fetch spark" in done.stderr
    assert "CDFBRIDGE_SPARK__JARS_DIR" in done.stderr
    assert "Traceback" not in done.stderr
