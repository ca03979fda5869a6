"""Tables with column mapping (`delta.columnMapping.mode = 'name'`), as Spark writes them:
their files name columns by physical ids, which the producer and cdfbridge-verify must map
back. A column RENAME is not additive: the producer stops and names the resync."""

from __future__ import annotations

from typing import Any

import pytest

from producer.errors import SchemaChangeError
from tests.endpoints import Endpoints
from tests.integration.test_verify import consume, replicate
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]

MAPPED = "delta.enableChangeDataFeed = true, delta.columnMapping.mode = 'name'"
RESYNC = r"resync it: `cdfbridge-producer \.\.\. resync TABLE`"


def create_mapped(spark: Any, path: str) -> None:
    """Version 0: an empty table whose columns are mapped by name."""
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id STRING, name STRING, age LONG) USING delta "
        f"TBLPROPERTIES ({MAPPED})"
    )


@pytest.fixture(scope="module")
def renamed(spark: Any, tmp_path_factory: Any) -> str:
    """Versions 1-4: two inserts, an update, `name` renamed to `full_name`, an insert."""
    path = str(tmp_path_factory.mktemp("mapped") / "renamed")
    table = f"delta.`{path}`"
    create_mapped(spark, path)
    spark.sql(f"INSERT INTO {table} VALUES ('1', 'ann', 30), ('2', 'bob', 40)")
    spark.sql(f"UPDATE {table} SET age = 31 WHERE id = '1'")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN name TO full_name")
    spark.sql(f"INSERT INTO {table} VALUES ('3', 'cy', 50)")
    return path


def test_a_column_mapped_table_with_an_added_column_replicates_and_verifies_equal(
    spark: Any, endpoints: Endpoints, delta_path: str, clickhouse: Any, ch_database: str
) -> None:
    table = f"delta.`{delta_path}`"
    create_mapped(spark, delta_path)
    spark.sql(f"INSERT INTO {table} VALUES ('1', 'ann', 30), ('2', 'bob', 40), ('3', 'cy', 50)")
    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (city STRING)")  # a new physical column id
    spark.sql(f"UPDATE {table} SET city = 'oslo', age = 31 WHERE id = '1'")
    spark.sql(f"DELETE FROM {table} WHERE id = '2'")

    settings = replicate(spark, endpoints, delta_path, ch_database)
    report = verify(settings)

    assert report.equal, report.render()
    current = f"`{ch_database}`.`{settings.verify.target_table}_current`"
    rows = clickhouse.query(f"SELECT id, name, age, city FROM {current} ORDER BY id").result_rows
    assert rows == [("1", "ann", 31, "oslo"), ("3", "cy", 50, None)]


def test_a_rename_stops_a_producer_reading_across_it_naming_the_resync(
    spark: Any, endpoints: Endpoints, renamed: str
) -> None:
    with pytest.raises(SchemaChangeError, match=rf"\['name'\] were dropped or renamed.*{RESYNC}"):
        publish(spark, endpoints, renamed, "id", until_version=4)


def test_a_rename_stops_a_producer_restarted_after_it_too(
    spark: Any, endpoints: Endpoints, renamed: str
) -> None:
    topic = publish(spark, endpoints, renamed, "id", until_version=2)  # stopped before it

    with pytest.raises(SchemaChangeError, match=rf"\['name'\] were dropped or renamed.*{RESYNC}"):
        publish(spark, endpoints, renamed, "id", until_version=4, topic=topic)


def test_the_resync_after_a_rename_verifies_equal(
    spark: Any, endpoints: Endpoints, renamed: str, clickhouse: Any, ch_database: str
) -> None:
    topic = publish(spark, endpoints, renamed, "id", snapshot=True, until_version=4)

    settings = consume(endpoints, renamed, topic, ch_database)
    report = verify(settings)

    assert report.equal, report.render()
    current = f"`{ch_database}`.`{settings.verify.target_table}_current`"
    rows = clickhouse.query(f"SELECT id, full_name, age FROM {current} ORDER BY id").result_rows
    assert rows == [("1", "ann", 31), ("2", "bob", 40), ("3", "cy", 50)]


def test_a_column_renamed_and_renamed_back_stops_naming_the_resync(
    spark: Any, endpoints: Endpoints, tmp_path: Any
) -> None:
    """The same schema at both ends of versions 1-5 hides the name read in between."""
    path = str(tmp_path / "there_and_back")
    table = f"delta.`{path}`"
    create_mapped(spark, path)
    spark.sql(f"INSERT INTO {table} VALUES ('1', 'ann', 30)")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN name TO full_name")
    spark.sql(f"INSERT INTO {table} VALUES ('2', 'bob', 40)")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN full_name TO name")
    spark.sql(f"INSERT INTO {table} VALUES ('3', 'cy', 50)")

    with pytest.raises(
        SchemaChangeError, match=rf"without the topic's columns \['name'\].*{RESYNC}"
    ):
        publish(spark, endpoints, path, "id", until_version=5)
