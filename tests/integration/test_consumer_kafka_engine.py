"""ClickHouse's Kafka engine, from the DDL cdfbridge generates, ends equal to the Python
consumer on the same topic."""

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from consumer.cli import main
from consumer.group.loop import Pipeline
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    ORDERS,
    Changes,
    consumer_env,
    order,
    orphan_dead_letter_topics_removed,  # noqa: F401 - autouse
    settings,
    wait_until_resolved_as,
    with_column,
)

pytestmark = pytest.mark.integration


def test_kafka_engine_table_equals_the_python_consumers(
    endpoints: Endpoints,
    topic_factory: Any,
    clickhouse: Any,
    ch_database: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = topic_factory(partitions=2)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(20)], "insert", 1)
    changes.send([order(n) for n in range(5)], "delete", 2)
    changes.send([order(n, "again") for n in range(3)], "insert", 2)
    changes.send([order(7, "changed")], "update_postimage", 3)
    changes.send_raw(b"k", b"not avro at all", partition=1)  # the last message of partition 1
    python_side = settings(endpoints, topic, ch_database, table="by_python")
    Pipeline(python_side, until_caught_up=True).run()
    consumer_env(monkeypatch, endpoints, ch_database)

    code = main(
        ["--topic", topic, "--group", f"{topic}-group", "--table", "by_kafka"]
        + ["kafka-engine-ddl", "--apply"]
    )

    assert code == 0
    assert "ENGINE = Kafka" in capsys.readouterr().out
    wait_until_group_committed_the_end(endpoints, topic, f"{topic}-group-clickhouse")
    db = f"`{ch_database}`"
    clickhouse.command(f"DROP TABLE {db}.by_kafka_kafka_mv")  # stop ingesting
    clickhouse.command(f"DROP TABLE {db}.by_kafka_kafka_errors_mv")
    clickhouse.command(f"DROP TABLE {db}.by_kafka_kafka")
    unparsed = clickhouse.query(
        f"SELECT partition, offset, raw_message FROM {db}.by_kafka_kafka_errors"
    ).result_rows
    probe = Consumer({"bootstrap.servers": endpoints.kafka, "group.id": f"{topic}-probe"})
    _, end = probe.get_watermark_offsets(TopicPartition(topic, 1), timeout=10)
    probe.close()
    assert unparsed == [(1, end - 1, "not avro at all")]
    resolved = "SELECT *, _version, _is_deleted FROM {db}.{t} FINAL ORDER BY id"
    by_python = clickhouse.query(resolved.format(db=db, t="by_python")).result_rows
    by_kafka = clickhouse.query(resolved.format(db=db, t="by_kafka")).result_rows
    assert by_kafka == by_python
    assert len(by_python) == 18  # ids 0-19, without 3 and 4 (deleted)
    current = "SELECT * FROM {db}.{t} ORDER BY id"
    assert clickhouse.query(current.format(db=db, t="by_kafka_current")).result_rows == (
        clickhouse.query(current.format(db=db, t="by_python_current")).result_rows
    )


def wait_until_group_committed_the_end(endpoints: Endpoints, topic: str, group: str) -> None:
    probe = Consumer({"bootstrap.servers": endpoints.kafka, "group.id": group})
    partitions = probe.list_topics(topic, timeout=10).topics[topic].partitions
    wanted = [TopicPartition(topic, p) for p in partitions]
    ends = {tp.partition: probe.get_watermark_offsets(tp, timeout=10)[1] for tp in wanted}
    deadline = time.monotonic() + 90
    while {tp.partition: tp.offset for tp in probe.committed(wanted, timeout=10)} != ends:
        assert time.monotonic() < deadline, f"group {group} did not commit {ends} in 90 s"
        time.sleep(0.5)
    probe.close()


def test_ddl_clickhouse_refuses_is_named_in_one_line_with_exit_1(
    endpoints: Endpoints,
    topic_factory: Any,
    clickhouse: Any,
    ch_database: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = topic_factory(partitions=1)
    Changes(endpoints, topic).send([order(1)], "insert", 1)
    # A table of that name, but not what the errors view writes: its CREATE is refused.
    clickhouse.command(f"CREATE TABLE `{ch_database}`.t_kafka_errors (x Int32) ENGINE = Memory")
    consumer_env(monkeypatch, endpoints, ch_database)

    code = main(["--topic", topic, "--table", "t", "kafka-engine-ddl", "--apply"])

    error = capsys.readouterr().err
    assert code == 1
    assert "THERE_IS_NO_COLUMN" in error
    assert "Traceback" not in error


def test_kafka_engine_tables_follow_an_added_column_and_read_its_rows_again(
    endpoints: Endpoints,
    topic_factory: Any,
    clickhouse: Any,
    ch_database: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows the Kafka table read before it knew a new column are read again once it is
    brought up to date, and end equal to the Python consumer's, the column's values too."""
    topic = topic_factory(partitions=2)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(10)], "insert", 1)
    consumer_env(monkeypatch, endpoints, ch_database)
    one = ["--topic", topic, "--group", f"{topic}-group", "--table", "by_kafka"]
    assert main([*one, "kafka-engine-ddl", "--apply"]) == 0
    wait_until_group_committed_the_end(endpoints, topic, f"{topic}-group-clickhouse")
    changes.use_schema(with_column(ORDERS, "note", "string"))
    changes.send([{**order(n), "note": f"new {n}"} for n in range(10, 15)], "insert", 2)
    changes.send([{**order(n, "again"), "note": "later"} for n in range(3)], "update_postimage", 3)
    # The old Kafka table reads them, without `note`.
    wait_until_group_committed_the_end(endpoints, topic, f"{topic}-group-clickhouse")
    capsys.readouterr()

    assert main([*one, "status"]) == 0
    assert "Kafka-engine tables of" in capsys.readouterr().out
    assert main([*one, "kafka-engine-ddl", "--apply"]) == 0
    Pipeline(settings(endpoints, topic, ch_database, table="by_python"), until_caught_up=True).run()

    columns = "id, name, amount, note"
    by_python = wait_until_resolved_as(clickhouse, ch_database, "by_kafka", "by_python", columns)
    notes = {row[0]: row[3] for row in by_python}
    assert (notes[0], notes[5], notes[12]) == ("later", None, "new 12")
    capsys.readouterr()
    assert main([*one, "status"]) == 0
    assert "Kafka-engine tables of" not in capsys.readouterr().out
