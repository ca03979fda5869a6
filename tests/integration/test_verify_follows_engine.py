"""verify follows the group that fills a Kafka-engine table: an evolution gives the engine
a new group (`<group>-<schema id>`), and the watcher, started with the old one, compares at
the versions the new group consumes, so drift made after the evolution is found there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.kafka_engine import plan as kafka_engine_plan
from schemas.target import Target
from services.table_marks import built_from
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_many_tables import _wait_for
from tests.integration.verify_support import running
from tests.producer_helpers import append, create_table, publish
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_the_watcher_follows_the_engines_new_group_and_finds_drift_after_it(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    path = str(tmp_path / "t")
    create_table(spark, path)
    append(spark, path, [("1", "ann", 30), ("2", "bob", 40)])
    topic = publish(spark, endpoints, path, "id", until_version=1)
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    group = f"{topic}-clickhouse"
    kafka_engine_plan.apply(into, kafka_engine_plan.plan(into, group))
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": ch_database},
        verify={
            "table": path,
            "topic": topic,
            "clickhouse_table": "t",
            "group": group,  # as `--group` named it before the evolution
            "interval_seconds": 0.3,
            "metrics_port": 0,
        },
    )
    with running(settings) as watch:
        found = watch.metrics.registry.get_sample_value
        table = {"table": watch.tables[0].name}
        _wait_for(lambda: found("cdfbridge_verify_version", table) == 1, "a round at 1")

        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (city STRING)")  # 2
        spark.sql(f"INSERT INTO delta.`{path}` VALUES ('5', 'eve', 25, 'Oslo')")  # 3
        publish(spark, endpoints, path, "id", topic=topic, until_version=3)
        kafka_engine_plan.apply(into, kafka_engine_plan.plan(into, group))  # evolves
        made = built_from(clickhouse, Target(ch_database, "t"))
        assert made is not None and made.group not in (None, group)
        spark.sql(f"UPDATE delta.`{path}` SET age = 41 WHERE id = '2'")  # 4: only the new
        publish(spark, endpoints, path, "id", topic=topic, until_version=4)  # group reads it
        _wait_for(lambda: found("cdfbridge_verify_version", table) == 4, "a round at 4")
        assert watch.tables[0].consumed.group == made.group

        sync = "SETTINGS mutations_sync = 2"
        clickhouse.command(f"ALTER TABLE {ch_database}.t UPDATE age = 0 WHERE id = '1' {sync}")
        wrong = {**table, "state": "wrong"}
        _wait_for(lambda: found("cdfbridge_verify_rows", wrong) == 1, "the drift found")
        assert found("cdfbridge_verify_version", table) == 4
        assert found("cdfbridge_verify_lag_seconds", table) == 0
