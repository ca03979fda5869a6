"""The fixtures' `docker` choice (CDFBRIDGE_TEST_SERVICES=docker) run for real: Kafka, the
registry and ClickHouse started by testcontainers from the locally built image, then a
table through the producer and consumer into ClickHouse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.group.loop import Pipeline
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import TestServices, provide
from tests.integration.consumer_support import settings
from tests.producer_helpers import publish

pytestmark = [pytest.mark.containers, pytest.mark.spark]


def test_the_docker_choice_runs_a_table_through_containers_from_local_images(
    images: None, spark: Any, tmp_path: Path
) -> None:
    import clickhouse_connect
    from deltalake import DeltaTable

    path = str(tmp_path / "people")
    generator = Generator(path, seed=5)
    for operation in ("insert", "update", "delete", "merge"):
        last = generator.commit(operation, rows=100)
    with provide(TestServices(services="docker")) as endpoints:
        assert endpoints.origin == "docker"
        topic = publish(spark, endpoints, path, "id", until_version=last)
        database = unique("db")
        clickhouse = clickhouse_connect.get_client(dsn=endpoints.clickhouse)
        clickhouse.command(f"CREATE DATABASE `{database}`")
        Pipeline(settings(endpoints, topic, database, table="people"), until_caught_up=True).run()
        current = clickhouse.query(
            f"SELECT id, name, age FROM `{database}`.`people_current` ORDER BY id"
        ).result_rows
    expected = DeltaTable(path).to_pyarrow_table(columns=["id", "name", "age"]).to_pylist()
    assert current and sorted(map(tuple, current)) == sorted(
        (r["id"], r["name"], r["age"]) for r in expected
    )
