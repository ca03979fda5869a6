"""`kafka-engine-ddl --apply` killed with SIGKILL while it brings a Kafka table to a newer
value schema (consumer/kafka_engine/evolve.py), after the old engine had read a message of
the newer schema without its new column: whichever step it died after, the next apply
reads that message again with every column, and the table ends equal to the Delta table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from schemas.target import Target
from services.table_marks import built_from
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env, verify_settings, wait_until_read
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.mark.parametrize(
    ("point", "dropped"),
    [("kafka_engine_evolve.recorded", False), ("kafka_engine_evolve.dropped", True)],
)
def test_an_apply_killed_in_an_evolve_reads_the_newer_rows_again_with_every_column(
    point: str,
    dropped: bool,
    spark: Any,
    endpoints: Endpoints,
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = str(tmp_path / "orders"), unique("evolve_kill")
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'n1')")
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    consumer_env(monkeypatch, endpoints, ch_database)
    apply = ["--topic", topic, "--group", unique("engine"), "--table", "t"]
    apply += ["kafka-engine-ddl", "--apply"]
    assert main(apply) == 0
    target = Target(ch_database, "t")
    old = built_from(clickhouse, target)
    assert old is not None and old.group

    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (country STRING)")  # 2
    spark.sql(f"INSERT INTO {table} VALUES (2, 'n2', 'fr')")
    spark.sql(f"UPDATE {table} SET country = 'de' WHERE id = 1")
    publish(spark, endpoints, path, "id", topic=topic, until_version=4)
    # The old engine reads and commits the newer schema's messages, without `country`.
    wait_until_read(endpoints.kafka, old.group, topic)

    env = {**os.environ, "CDFBRIDGE_FAULT_POINT": point}
    killed = subprocess.run(
        [sys.executable, "-m", "consumer", *apply], env=env, capture_output=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-3000:]
    assert (built_from(clickhouse, target) is None) is dropped

    assert main(apply) == 0

    built = built_from(clickhouse, target)
    assert built is not None and built.group != old.group
    settings = verify_settings(endpoints, ch_database, path, "t", topic=topic, wait_seconds=60)
    report = verify(settings)
    assert report.equal, report.render()
    assert clickhouse.command(f"SELECT count() FROM `{ch_database}`.t_kafka_errors") == 0
