"""Delta type widening (`delta.enableTypeWidening`): the producer reads each range in the types
it was written with, up to the widening and after it, and consumers widen their columns in
place; the Python consumer's table, the Kafka engine's and the Delta table end equal. A
narrowing (only a rewrite of the table can make one) still stops the producer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env, resolved, wait_until_resolved_as
from tests.integration.test_verify import consume
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]
COLUMNS = "id, i, b, f, d"
WIDENINGS = (
    "ALTER COLUMN i TYPE BIGINT",
    "ALTER COLUMN b TYPE SMALLINT",
    "ALTER COLUMN f TYPE DOUBLE",
    "ALTER COLUMN d TYPE DECIMAL(8, 3)",
)


def test_widened_types_are_followed_by_both_consumers(
    spark: Any,
    endpoints: Endpoints,
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = str(tmp_path / "widened")
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, i INT, b BYTE, f FLOAT, d DECIMAL(5, 2)) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true, delta.enableTypeWidening = true)"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 1, 1, 1.5, 1.25), (2, 2, 2, 2.5, 2.5)")
    topic = unique("widened")
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    consume(endpoints, path, topic, ch_database, table="by_python")
    consumer_env(monkeypatch, endpoints, ch_database)
    engine = ["--topic", topic, "--group", unique("engine"), "--table", "by_kafka"]
    assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0

    spark.sql(f"INSERT INTO {table} VALUES (3, 3, 3, 3.5, 3.75)")  # before the widening
    for widening in WIDENINGS:
        spark.sql(f"ALTER TABLE {table} {widening}")
    spark.sql(f"INSERT INTO {table} VALUES (4, 3000000000, 300, 4.25, 12345.678)")
    spark.sql(f"UPDATE {table} SET i = 5000000000 WHERE id = 1")
    last = spark.sql(f"DESCRIBE HISTORY {table}").agg({"version": "max"}).first()[0]
    # One span from before the widening to after it: read in parts, each in its own types.
    publish(spark, endpoints, path, "id", topic=topic, until_version=last)
    settings = consume(endpoints, path, topic, ch_database, table="by_python")
    assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0

    report = verify(settings)
    assert report.equal, report.render()
    by_python = wait_until_resolved_as(clickhouse, ch_database, "by_kafka", "by_python", COLUMNS)
    consume(endpoints, path, topic, ch_database, table="by_replay")  # both types in one read
    assert resolved(clickhouse, ch_database, "by_replay", COLUMNS) == by_python
    assert {row[0]: row[1] for row in by_python}[1] == 5_000_000_000
