"""The proof end to end: one table taken through a nested field added, a key rewritten and a
resync, then read three ways, the Python consumer that followed it all along (rebuilt at the
resync), a Kafka-engine subscriber and a bootstrap both started afterwards, ends equal to
the Delta table by cdfbridge-verify each time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from consumer.group.loop import Pipeline
from consumer.process import run
from consumer.rebuild.steps import bootstrap, rebuild
from producer.resync import resync_command
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env, verify_settings
from tests.integration.consumer_support import settings as consumer_settings
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _equal(endpoints: Endpoints, database: str, path: str, topic: str, table: str) -> None:
    settings = verify_settings(endpoints, database, path, table, topic=topic, wait_seconds=90)
    report = verify(settings)
    assert report.equal, f"{table}: {report.render()}"


def test_a_table_through_a_nested_addition_a_key_rewrite_and_a_resync_ends_equal_three_ways(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = str(tmp_path / "people"), unique("e2e")
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING, addr STRUCT<city: STRING>) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(
        f"INSERT INTO {table} SELECT id, concat('n', id), named_struct('city', 'c') FROM range(200)"
    )
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    python = consumer_settings(endpoints, topic, ch_database, table="by_python")
    Pipeline(python, until_caught_up=True).run()

    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (addr.country STRING)")  # 2
    spark.sql(f"UPDATE {table} SET addr.country = 'fr' WHERE id < 50")  # 3
    spark.sql(f"UPDATE {table} SET id = id + 1000 WHERE id >= 150")  # 4: keys rewritten
    publish(spark, endpoints, path, "id", topic=topic, until_version=4)
    Pipeline(python, until_caught_up=True).run()
    _equal(endpoints, ch_database, path, topic, "by_python")

    spark.sql(f"DELETE FROM {table} WHERE id < 10")  # 5
    resync_command.request({"bootstrap.servers": endpoints.kafka}, topic, wait_s=0)
    publish(spark, endpoints, path, "id", topic=topic, until_version=5)  # generation 1
    spark.sql(
        f"INSERT INTO {table} VALUES (5000, 'new', named_struct('city', 'x', 'country', 'de'))"
    )
    publish(spark, endpoints, path, "id", topic=topic, until_version=6)

    rebuild(python)  # the Python consumer's table, rebuilt for generation 1
    Pipeline(python, until_caught_up=True).run()
    _equal(endpoints, ch_database, path, topic, "by_python")

    consumer_env(monkeypatch, endpoints, ch_database)
    engine = ["--topic", topic, "--group", unique("engine"), "--table", "by_engine"]
    assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0
    _equal(endpoints, ch_database, path, topic, "by_engine")

    lake = consumer_settings(endpoints, topic, ch_database, table="by_lake", group=unique("g"))
    bootstrap(lake)
    assert run(lake, until_caught_up=True) == []
    _equal(endpoints, ch_database, path, topic, "by_lake")
