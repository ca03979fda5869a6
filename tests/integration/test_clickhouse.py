"""The ClickHouse server is real: version, ReplacingMergeTree(ver, is_deleted), Kafka engine."""

import time
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def test_server_version_is_26_or_later(clickhouse: Any) -> None:
    version = clickhouse.command("SELECT version()")

    assert int(str(version).split(".")[0]) >= 26


def test_replacing_merge_tree_final_keeps_latest_version_and_hides_deleted(
    clickhouse: Any, ch_database: str
) -> None:
    table = f"`{ch_database}`.`rows`"
    clickhouse.command(
        f"CREATE TABLE {table} (id String, name String, ver UInt64, is_deleted UInt8) "
        "ENGINE = ReplacingMergeTree(ver, is_deleted) ORDER BY id"
    )
    clickhouse.insert(
        table,
        [["a", "first", 1, 0], ["b", "kept", 1, 0], ["c", "gone", 1, 0]],
        column_names=["id", "name", "ver", "is_deleted"],
    )
    clickhouse.insert(
        table,
        [["a", "second", 2, 0], ["c", "gone", 2, 1]],
        column_names=["id", "name", "ver", "is_deleted"],
    )

    raw = clickhouse.query(f"SELECT count() FROM {table}").result_rows
    final = clickhouse.query(f"SELECT id, name FROM {table} FINAL ORDER BY id").result_rows

    assert raw == [(5,)]
    assert final == [("a", "second"), ("b", "kept")]


def test_kafka_engine_consumes_topic_into_table(
    clickhouse: Any, ch_database: str, endpoints: Endpoints, topic_factory: Any
) -> None:
    topic = topic_factory(partitions=1)
    producer = Producer({"bootstrap.servers": endpoints.kafka})
    for n in range(100):
        producer.produce(topic, value=f"{n}\n".encode())
    producer.flush(30)
    db = f"`{ch_database}`"
    clickhouse.command(
        f"CREATE TABLE {db}.queue (n UInt32) ENGINE = Kafka SETTINGS "
        f"kafka_broker_list = '{endpoints.kafka_for_clickhouse}', kafka_topic_list = '{topic}', "
        f"kafka_group_name = '{topic}', kafka_format = 'TSV'"
    )
    clickhouse.command(f"CREATE TABLE {db}.sink (n UInt32) ENGINE = MergeTree ORDER BY n")
    clickhouse.command(
        f"CREATE MATERIALIZED VIEW {db}.pump TO {db}.sink AS SELECT n FROM {db}.queue"
    )

    deadline = time.monotonic() + 60
    while clickhouse.command(f"SELECT count() FROM {db}.sink") < 100:
        assert time.monotonic() < deadline, "the Kafka engine did not consume the topic in 60 s"
        time.sleep(0.5)

    assert clickhouse.query(f"SELECT count(), sum(n) FROM {db}.sink").result_rows == [(100, 4950)]
    clickhouse.command(f"DROP TABLE {db}.pump")
    clickhouse.command(f"DROP TABLE {db}.queue")
