"""A generation compares with its own value schema, not the subject's latest.

After a column is added and dropped again, the resync's schema equals an older version of
the subject. The registry answers it with that version's id and adds no version (Apicurio
3.3.3 here, as Confluent Schema Registry does), so the subject's "latest" stays the schema
with the dropped column. The producer must restart without a new generation, and a
consumer must build its table without the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.process import run
from producer.resync import resync_command
from schemas.naming import value_subject
from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.consumer_support import verify_settings
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_a_column_added_dropped_and_resynced_makes_one_generation_and_no_column(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    path, topic = str(tmp_path / "t"), unique("gen_schema")
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, a STRING) USING delta TBLPROPERTIES ("
        "delta.enableChangeDataFeed = true, delta.columnMapping.mode = 'name', "
        "delta.minReaderVersion = '2', delta.minWriterVersion = '5')"
    )
    spark.sql(f"INSERT INTO {table} SELECT id, 'a' FROM range(20)")  # 1
    source = {"topic": topic, "on_incompatible_change": "resync"}
    publish(spark, endpoints, path, "id", until_version=1, **source)
    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (b STRING)")  # 2
    spark.sql(f"UPDATE {table} SET b = 'x' WHERE id < 5")  # 3
    publish(spark, endpoints, path, "id", until_version=3, **source)
    spark.sql(f"ALTER TABLE {table} DROP COLUMN b")  # 4
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    resync_command.request(kafka, topic, wait_s=0)
    publish(spark, endpoints, path, "id", until_version=4, **source)  # generation 1
    assert Progress(kafka, topic).read().generation.number == 1

    registry, subject = endpoints.registry_client(), value_subject(topic)
    assert registry.get_versions(subject) == [1, 2]  # no version for the resync's schema
    assert '"b"' in (registry.get_latest_version(subject).schema.schema_str or "")

    spark.sql(f"INSERT INTO {table} VALUES (100, 'late')")  # 5
    publish(spark, endpoints, path, "id", until_version=5, **source)  # a restart
    publish(spark, endpoints, path, "id", until_version=5, **source)  # and another
    assert Progress(kafka, topic).read().generation.number == 1

    settings = consumer_settings(endpoints, topic, ch_database, table="t")
    assert run(settings, until_caught_up=True) == []  # a new group: from the generation
    columns = clickhouse.query(
        "SELECT name FROM system.columns WHERE database = {db:String} AND table = 't'",
        parameters={"db": ch_database},
    ).result_rows
    assert "b" not in [name for (name,) in columns]
    report = verify(verify_settings(endpoints, ch_database, path, "t", topic=topic))
    assert report.equal, report.render()
