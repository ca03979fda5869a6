"""Changes of several MB: they reach ClickHouse through both consumers, and one that does not
fit is named (topic, key, version, setting) with nothing of its chunk visible."""

from __future__ import annotations

import os
import time
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from consumer.cli import main as consumer_main
from consumer.group.loop import Pipeline
from producer.errors import MessageTooLargeError
from producer.run import run
from producer.settings import ProducerSettings
from services.progress_topic import Progress
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.consumer_support import settings as consumer_settings

pytestmark = [pytest.mark.integration, pytest.mark.spark]

MB = 1_000_000


def large_table(path: str, sizes: list[int]) -> None:
    """Row i holds a text of sizes[i] bytes that barely compresses, and half as many bytes."""
    from deltalake import write_deltalake

    texts = [os.urandom(size // 2).hex() for size in sizes]
    rows = {
        "id": pa.array(range(len(sizes)), pa.int64()),
        "doc": texts,
        "blob": pa.array([os.urandom(size // 2) for size in sizes], pa.binary()),
    }
    write_deltalake(path, pa.table(rows), configuration={"delta.enableChangeDataFeed": "true"})


def produce(spark: Any, endpoints: Endpoints, path: str, topic: str, **kafka: Any) -> None:
    settings = ProducerSettings(
        kafka={"bootstrap_servers": endpoints.kafka, **kafka},
        schema_registry={"url": endpoints.registry},
        source={
            "table": path,
            "primary_key": "id",
            "metrics_port": None,
            "topic": topic,
            "until_version": 0,
        },
    )
    run(settings, spark)


def visible(endpoints: Endpoints, topic: str) -> int:
    """Messages a read_committed reader sees in the topic's one partition."""
    reader = Consumer(
        {
            "bootstrap.servers": endpoints.kafka,
            "group.id": unique("probe"),
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen, deadline = 0, time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            message = reader.poll(1)
            if message is None:
                continue
            error = message.error()
            if error is None:
                seen += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                return seen
        raise AssertionError(f"no end of {topic} within 30 s")
    finally:
        reader.close()


def test_changes_of_several_mb_reach_clickhouse_through_both_consumers(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Any,
    clickhouse: Any,
    ch_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = str(tmp_path / "large"), unique("large")
    large_table(path, [3 * MB, 10, 5 * MB])
    produce(spark, endpoints, path, topic)

    Pipeline(consumer_settings(endpoints, topic, ch_database), until_caught_up=True).run()

    lengths = "SELECT id, length(doc), length(blob) FROM `{}`.`{}` ORDER BY id"
    wanted = [(0, 3 * MB, 3 * MB // 2), (1, 10, 5), (2, 5 * MB, 5 * MB // 2)]
    assert clickhouse.query(lengths.format(ch_database, f"{topic}_current")).result_rows == wanted
    consumer_env(monkeypatch, endpoints, ch_database)
    ddl = ["--topic", topic, "--group", f"{topic}-kafka", "--table", "by_kafka"]
    assert consumer_main([*ddl, "kafka-engine-ddl", "--apply"]) == 0
    deadline = time.monotonic() + 90
    while clickhouse.query(lengths.format(ch_database, "by_kafka_current")).result_rows != wanted:
        assert time.monotonic() < deadline, "the Kafka engine did not store the rows in 90 s"
        time.sleep(0.5)


def test_a_change_over_the_setting_is_named_and_nothing_of_its_chunk_is_visible(
    spark: Any, endpoints: Endpoints, tmp_path: Any
) -> None:
    path, topic = str(tmp_path / "too_large"), unique("too_large")
    large_table(path, [10, 3 * MB])

    with pytest.raises(MessageTooLargeError) as raised:
        produce(spark, endpoints, path, topic, max_message_bytes=2**20)

    message = str(raised.value)
    for part in (topic, "key id=1", "Delta version 0", "CDFBRIDGE_KAFKA__MAX_MESSAGE_BYTES"):
        assert part in message
    assert visible(endpoints, topic) == 0
    assert Progress({"bootstrap.servers": endpoints.kafka}, topic).last_version() is None


def test_a_topic_with_a_lower_limit_is_named_with_the_command_that_raises_it(
    spark: Any, endpoints: Endpoints, tmp_path: Any, topic_factory: Any
) -> None:
    path, topic = str(tmp_path / "old_topic"), topic_factory(1, **{"max.message.bytes": str(MB)})
    large_table(path, [10, 3 * MB])

    with pytest.raises(MessageTooLargeError) as raised:
        produce(spark, endpoints, path, topic)

    message = str(raised.value)
    assert f"kafka-configs --alter --entity-type topics --entity-name {topic}" in message
    assert "key id=1" in message
    assert visible(endpoints, topic) == 0
