"""End to end: Delta table → producer → Kafka → consumer → ClickHouse equals the table."""

from typing import Any

import pytest

from consumer.group.loop import Pipeline
from stack.generate import Generator
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings
from tests.producer_helpers import publish

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def delta_rows(path: str) -> list[tuple[str, str, int]]:
    from deltalake import DeltaTable

    table = DeltaTable(path).to_pyarrow_table(columns=["id", "name", "age"]).to_pylist()
    return sorted((r["id"], r["name"], r["age"]) for r in table)


def test_clickhouse_current_view_equals_the_delta_table_after_every_kind_of_change(
    spark: Any, endpoints: Endpoints, delta_path: str, clickhouse: Any, ch_database: str
) -> None:
    generator = Generator(delta_path, seed=3)
    for operation in ("insert", "update", "merge", "delete", "insert", "merge", "delete"):
        last = generator.commit(operation, rows=200)

    topic = publish(spark, endpoints, delta_path, "id", until_version=last)
    Pipeline(settings(endpoints, topic, ch_database, table="people"), until_caught_up=True).run()

    current = clickhouse.query(
        f"SELECT id, name, age FROM `{ch_database}`.`people_current` ORDER BY id"
    ).result_rows
    assert sorted(current) == delta_rows(delta_path)
