"""Tombstones under the broker's own log cleaner: a reader that read a table's rows, then
resumes after compaction removed the delete records behind their tombstones, still deletes
the keys (each tombstone carries its delete), and a Kafka-engine subscriber started on the
compacted topic is equal too."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from consumer.group.loop import Pipeline
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_end_to_end_interleavings import _equal
from tests.producer_helpers import publish, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# Compacted as soon as the broker's cleaner looks (every 15 s): segments roll after a
# second, any dirt is enough, nothing is held back; tombstones themselves stay an hour.
COMPACTING = {
    "cleanup.policy": "compact",
    "segment.ms": "1000",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
    "delete.retention.ms": "3600000",
}
DELETED = 100  # ids 0..99 are deleted at version 2
CLEANER_WAIT_S = 150


def test_a_reader_behind_the_log_cleaner_still_deletes_and_a_new_engine_is_equal(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = str(tmp_path / "items"), unique("tomb")
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, name STRING) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"INSERT INTO {table} SELECT id, concat('n', id) FROM range(300)")  # 1
    source = {"topic": topic, "tombstones": True, "topic_config": COMPACTING}
    publish(spark, endpoints, path, "id", until_version=1, **source)
    lagging = consumer_settings(endpoints, topic, ch_database, table="lagging")
    Pipeline(lagging, until_caught_up=True).run()  # it holds all 300 rows

    spark.sql(f"DELETE FROM {table} WHERE id < {DELETED}")  # 2
    publish(spark, endpoints, path, "id", until_version=2, **source)
    time.sleep(1.5)  # past segment.ms: the next append rolls every partition's segment
    spark.sql(f"INSERT INTO {table} SELECT id, 'late' FROM range(1000, 1030)")  # 3
    publish(spark, endpoints, path, "id", until_version=3, **source)
    _wait_until_the_deletes_are_compacted_away(endpoints, topic)

    Pipeline(lagging, until_caught_up=True).run()
    _equal(endpoints, ch_database, path, topic, "lagging")

    consumer_env(monkeypatch, endpoints, ch_database)
    engine = ["--topic", topic, "--group", unique("engine"), "--table", "by_engine"]
    assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0
    _equal(endpoints, ch_database, path, topic, "by_engine")


def _wait_until_the_deletes_are_compacted_away(endpoints: Endpoints, topic: str) -> None:
    """Until no record of a deleted id has a value: the cleaner kept only the tombstones."""
    deadline = time.monotonic() + CLEANER_WAIT_S
    while True:
        records = read_topic(endpoints, topic)
        left = [r for r in records if r.key["id"] < DELETED and r.value is not None]
        tombstones = [r for r in records if r.key["id"] < DELETED and r.value is None]
        if not left:
            assert len(tombstones) == DELETED, f"{len(tombstones)} tombstones of {DELETED}"
            return
        assert time.monotonic() < deadline, (
            f"the log cleaner left {len(left)} records of deleted ids after {CLEANER_WAIT_S} s"
        )
        time.sleep(5)
