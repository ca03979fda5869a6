"""Fields added inside structs (a struct column, an array of structs, a map's struct values)
are followed like added columns: by the producer, the Python consumer and the Kafka engine,
which end equal to each other and to the Delta table."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from schemas.target import Target
from services.table_marks import built_from
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    consumer_env,
    joined_member,
    resolved,
    verify_settings,
    wait_until_read,
    wait_until_resolved_as,
)
from tests.integration.test_verify import consume
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]
SCHEMA = "id BIGINT, addr STRUCT<street: STRING>, tags ARRAY<STRUCT<k: STRING>>, " + (
    "m MAP<STRING, STRUCT<a: INT>>"
)
COLUMNS = "id, addr, tags, m"


def test_fields_added_inside_structs_reach_both_consumers_tables(
    spark: Any,
    endpoints: Endpoints,
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = str(tmp_path / "nested")
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} ({SCHEMA}) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(
        f"INSERT INTO {table} VALUES (1, named_struct('street', 's1'), "
        "array(named_struct('k', 'k1')), map('x', named_struct('a', 1))), "
        "(2, named_struct('street', 's2'), array(), map())"
    )
    topic = unique("nested")
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    consume(endpoints, path, topic, ch_database, table="by_python")
    consumer_env(monkeypatch, endpoints, ch_database)
    engine = ["--topic", topic, "--group", unique("engine"), "--table", "by_kafka"]
    assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0
    # The engine reads and commits the first schema's messages before the change (the engine
    # that had not: test_an_engine_brought_to_a_newer_schema_before_it_committed_loses_no_row).
    built = built_from(clickhouse, Target(ch_database, "by_kafka"))
    assert built is not None and built.group
    wait_until_read(endpoints.kafka, built.group, topic)

    spark.sql(
        f"ALTER TABLE {table} ADD COLUMNS (addr.country STRING, tags.element.w STRING, "
        "m.value.b STRING)"
    )
    spark.sql(
        f"INSERT INTO {table} VALUES (3, named_struct('street', 's3', 'country', 'fr'), "
        "array(named_struct('k', 'k3', 'w', 'w3')), "
        "map('y', named_struct('a', 3, 'b', 'b3')))"
    )
    spark.sql(f"UPDATE {table} SET addr.country = 'de' WHERE id = 1")
    last = spark.sql(f"DESCRIBE HISTORY {table}").agg({"version": "max"}).first()[0]
    publish(spark, endpoints, path, "id", topic=topic, until_version=last)
    settings = consume(endpoints, path, topic, ch_database, table="by_python")
    assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0

    report = verify(settings)
    assert report.equal, report.render()
    by_python = wait_until_resolved_as(clickhouse, ch_database, "by_kafka", "by_python", COLUMNS)
    # A new subscriber reads both schemas' messages in its batches: the same table again.
    consume(endpoints, path, topic, ch_database, table="by_replay")
    assert resolved(clickhouse, ch_database, "by_replay", COLUMNS) == by_python
    addresses = {row[0]: row[1] for row in by_python}
    assert addresses[1] == {"street": "s1", "country": "de"}
    assert addresses[3] == {"street": "s3", "country": "fr"}

    # A Kafka-engine subscriber that starts after the additions: its table from the lake,
    # its engine from there on, nothing in its errors table.
    late = ["--topic", topic, "--group", unique("late"), "--table", "by_late"]
    assert main([*late, "kafka-engine-ddl", "--apply"]) == 0
    section = settings.verify.model_copy(update={"clickhouse_table": "by_late", "wait_seconds": 60})
    report = verify(settings.model_copy(update={"verify": section}))
    assert report.equal, report.render()
    errors = f"SELECT count() FROM `{ch_database}`.by_late_kafka_errors"
    assert clickhouse.command(errors) == 0


@pytest.mark.parametrize("applies", [1, 2])
def test_an_engine_applied_after_two_struct_additions_ends_equal_with_no_errors_left(
    applies: int,
    spark: Any,
    endpoints: Endpoints,
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = str(tmp_path / "twice"), unique("twice")
    consumer_env(monkeypatch, endpoints, ch_database)
    table, engine = _one_struct_engine(spark, endpoints, path, topic)
    settings = verify_settings(
        endpoints, ch_database, path, "by_kafka", topic=topic, wait_seconds=60
    )
    assert verify(settings).equal

    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (addr.country STRING)")  # 2
    spark.sql(f"INSERT INTO {table} VALUES (2, named_struct('street', 's2', 'country', 'fr'))")
    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (addr.zip STRING)")  # 4
    spark.sql(
        f"INSERT INTO {table} VALUES (3, named_struct('street', 's3', 'country', 'de', "
        "'zip', 'z3'))"
    )
    publish(spark, endpoints, path, "id", topic=topic, until_version=5)

    if applies == 1:
        assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0  # two schemas newer
    else:  # two processes at once (a cron job and a watcher), each loading from the lake
        command = [sys.executable, "-m", "consumer", *engine, "kafka-engine-ddl", "--apply"]
        both = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        logs = [p.communicate(timeout=300)[1] for p in both]
        assert [p.returncode for p in both] == [0, 0], logs

    report = verify(settings)
    assert report.equal, report.render()
    errors = f"SELECT count() FROM `{ch_database}`.by_kafka_kafka_errors"
    assert clickhouse.command(errors) == 0


def test_an_engine_brought_to_a_newer_schema_before_it_committed_loses_no_row(
    spark: Any,
    endpoints: Endpoints,
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A struct gains a field and apply runs again while the engine's group has a member but
    has committed nothing yet (ClickHouse joined but had not flushed). The group is not moved
    under its member; the new Kafka table, which cannot parse the first messages, gets its
    table loaded from the lake, and nothing is left in its errors table."""
    path, topic = str(tmp_path / "unread"), unique("unread")
    consumer_env(monkeypatch, endpoints, ch_database)
    table, engine = _one_struct_engine(spark, endpoints, path, topic)
    for view in ("by_kafka_kafka_mv", "by_kafka_kafka_errors_mv"):  # ClickHouse reads nothing
        clickhouse.command(f"DROP VIEW `{ch_database}`.`{view}` SYNC")
    built = built_from(clickhouse, Target(ch_database, "by_kafka"))
    assert built is not None and built.group
    member = joined_member(endpoints.kafka, built.group, topic)  # has not committed yet

    spark.sql(f"ALTER TABLE {table} ADD COLUMNS (addr.country STRING)")  # 2
    spark.sql(f"INSERT INTO {table} VALUES (2, named_struct('street', 's2', 'country', 'fr'))")
    publish(spark, endpoints, path, "id", topic=topic, until_version=3)
    try:
        assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0
    finally:
        member.close()

    settings = verify_settings(
        endpoints, ch_database, path, "by_kafka", topic=topic, wait_seconds=60
    )
    report = verify(settings)
    assert report.equal, report.render()
    time.sleep(6)  # the engine's flush interval (5 s): whatever it could not parse is logged
    errors = f"SELECT count() FROM `{ch_database}`.by_kafka_kafka_errors"
    assert clickhouse.command(errors) == 0


def _one_struct_engine(
    spark: Any, endpoints: Endpoints, path: str, topic: str
) -> tuple[str, list[str]]:
    """A Delta table of one struct column, its first row published to topic, and a Kafka
    engine applied for it (with consumer_env): the table's SQL name and the engine's flags."""
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (id BIGINT, addr STRUCT<street: STRING>) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, named_struct('street', 's1'))")
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    engine = ["--topic", topic, "--group", unique("engine"), "--table", "by_kafka"]
    assert main([*engine, "kafka-engine-ddl", "--apply"]) == 0
    return table, engine
