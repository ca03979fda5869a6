"""`cdfbridge-verify` against a real pipeline: equal after replication, and on a tampered
target it names the lost, extra and wrong keys with the differing values."""

from __future__ import annotations

from typing import Any

import pytest

from consumer.group.loop import Pipeline
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.producer_helpers import change_every_way, create_table, publish, without_delta_jars
from verify.check import verify
from verify.cli import main
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TYPES = """id STRING, dec DECIMAL(18,4), bin BINARY, dt DATE, ts TIMESTAMP, tsn TIMESTAMP_NTZ,
 f FLOAT, arr ARRAY<BIGINT>, m MAP<STRING, DOUBLE>, st STRUCT<a: INT, m: MAP<STRING, INT>>,
 nested ARRAY<STRUCT<x: INT, tags: ARRAY<STRING>>>"""
ROW = """('{id}', 12.3456, X'0102', DATE'2024-01-02', TIMESTAMP'2024-01-02 03:04:05.123456',
 TIMESTAMP_NTZ'2024-01-02 03:04:05.5', 1.5, array(1, 2), map('b', 2.0, 'a', 1.0),
 named_struct('a', 1, 'm', map('z', 1, 'y', 2)), array(named_struct('x', 5, 'tags', array('t'))))"""
NULLS = "('{id}'" + ", NULL" * 10 + ")"


def replicate(spark: Any, endpoints: Endpoints, path: str, database: str) -> VerifySettings:
    """Publish the table to its last version, consume it, and return checker settings."""
    last = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").agg({"version": "max"}).first()[0]
    return consume(
        endpoints, path, publish(spark, endpoints, path, "id", until_version=last), database
    )


def consume(
    endpoints: Endpoints, path: str, topic: str, database: str, table: str = ""
) -> VerifySettings:
    """A new consumer group fills `database` from the topic (into `table`, or the topic's
    default); returns checker settings."""
    named = {"table": table} if table else {}
    into = consumer_settings(endpoints, topic, database, group=unique("group"), **named)
    Pipeline(into, until_caught_up=True).run()
    return VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"table": path, "topic": topic, "clickhouse_table": table},
    )


@pytest.fixture(scope="module")
def people_topic(spark: Any, endpoints: Endpoints, tmp_path_factory: Any) -> tuple[str, str]:
    path = str(tmp_path_factory.mktemp("verify") / "people")
    change_every_way(spark, path)  # ids 1, 3, 4 survive; 2 is deleted
    return path, publish(spark, endpoints, path, "id", until_version=4)


@pytest.fixture
def people(people_topic: tuple[str, str], endpoints: Endpoints, ch_database: str) -> VerifySettings:
    """The people table replicated into this test's own database, to tamper with."""
    return consume(endpoints, *people_topic, ch_database)


def test_every_type_compares_equal_after_replication(
    spark: Any, endpoints: Endpoints, tmp_path: Any, ch_database: str
) -> None:
    path = str(tmp_path / "types")
    create_table(spark, path, TYPES)
    rows = [ROW.format(id=i) for i in range(5)] + [NULLS.format(id="n")]
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {', '.join(rows)}")
    spark.sql(f"UPDATE delta.`{path}` SET f = 2.5, m = map('c', 3.0, 'a', 1.0) WHERE id = '1'")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = '2'")

    report = verify(replicate(spark, endpoints, path, ch_database))

    assert report.equal, report.render()
    assert (report.delta.rows, report.clickhouse.rows) == (5, 5)
    assert report.normalised == ["arr", "m", "st", "nested"]  # row n holds NULL there
    assert "compared as empty in arr, m, st, nested" in report.render()


def test_a_tampered_table_shows_lost_extra_and_wrong_keys_with_values(
    people: VerifySettings, clickhouse: Any, ch_database: str
) -> None:
    table = f"`{ch_database}`.`{people.verify.target_table}`"
    tampered = "_commit_version, _change_type, _commit_timestamp"
    clickhouse.command(
        f"INSERT INTO {table} (id, name, age, {tampered}) VALUES "
        "('1', 'ann', 99, 100, 'update_postimage', now64()), "  # wrong age
        "('3', 'cy', 51, 100, 'delete', now64()), "  # lost
        "('9', 'zed', 1, 100, 'insert', now64())"  # extra
    )

    report = verify(people)

    assert not report.equal
    assert (report.lost, report.extra, report.wrong) == (1, 1, 1)
    assert (report.lost_keys, report.extra_keys, report.wrong_keys) == (
        [{"id": "3"}],
        [{"id": "9"}],
        [{"id": "1"}],
    )
    [age] = report.columns
    assert (age.column, age.keys, age.sample_key, age.delta, age.clickhouse) == (
        "age",
        1,
        {"id": "1"},
        "31",
        "99",
    )
    assert "NOT EQUAL: 1 lost, 1 extra, 1 wrong" in report.render()


def test_the_command_exits_0_when_equal_and_1_with_a_report_when_not(
    people: VerifySettings, clickhouse: Any, ch_database: str, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS", people.kafka.bootstrap_servers)
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__URL", people.clickhouse.url)
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__DATABASE", ch_database)
    args = ["--table", people.verify.table, "--topic", people.verify.topic]

    assert main(args) == 0
    assert capsys.readouterr().out.rstrip().endswith("equal")

    clickhouse.command(
        f"INSERT INTO `{ch_database}`.`{people.verify.target_table}` "
        "(id, name, age, _commit_version, _change_type, _commit_timestamp) "
        "VALUES ('1', 'ann', 99, 100, 'update_postimage', now64())"
    )
    assert main([*args, "--json"]) == 1
    assert '"wrong": 1' in capsys.readouterr().out


def test_a_missing_target_or_unpublished_topic_is_named_with_the_fix(
    people: VerifySettings, capsys: Any
) -> None:
    missing = people.model_copy(
        update={"verify": people.verify.model_copy(update={"clickhouse_table": "nope"})}
    )
    with pytest.raises(Exception, match="no ClickHouse table .*nope.*run the consumer first"):
        verify(missing)
    unpublished = people.model_copy(
        update={
            "verify": people.verify.model_copy(
                update={"topic": unique("never"), "clickhouse_table": people.verify.target_table}
            )
        }
    )
    with pytest.raises(Exception, match="nothing published to .* run the producer first"):
        verify(unpublished)


def test_with_wait_a_target_the_consumer_has_not_created_yet_is_waited_for(
    people_topic: tuple[str, str], endpoints: Endpoints, ch_database: str
) -> None:
    """As docker-compose.yml starts it: verify may run before the consumer's first batch."""
    import threading

    path, topic = people_topic
    waiting = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": ch_database},
        verify={"table": path, "topic": topic, "wait_seconds": 120},
    )
    reports = []
    checker = threading.Thread(target=lambda: reports.append(verify(waiting)))
    checker.start()
    checker.join(3)
    assert checker.is_alive()  # no table yet: still waiting, not failed
    consume(endpoints, path, topic, ch_database)
    checker.join(120)
    assert reports and reports[0].equal, reports and reports[0].render()


def test_latest_compares_at_the_tables_last_version_not_the_last_published_one(
    spark: Any, endpoints: Endpoints, tmp_path: Any, ch_database: str
) -> None:
    path = str(tmp_path / "people")
    change_every_way(spark, path)  # versions 0..4
    checked = consume(
        endpoints, path, publish(spark, endpoints, path, "id", until_version=3), ch_database
    )

    published = verify(checked)
    latest = verify(
        checked.model_copy(update={"verify": checked.verify.model_copy(update={"latest": True})})
    )

    assert (published.version, published.equal) == (3, True), published.render()
    assert (latest.version, latest.equal) == (4, False), latest.render()


def test_the_spark_reader_without_delta_jars_exits_2_naming_the_fixes(
    people: VerifySettings, ch_database: str, tmp_path: Any
) -> None:
    args = ["--table", people.verify.table, "--topic", people.verify.topic, "--reader", "spark"]
    done = without_delta_jars(
        "verify",
        args,
        str(tmp_path / "no-jars"),
        kafka__bootstrap_servers=people.kafka.bootstrap_servers,
        clickhouse__url=people.clickhouse.url,
        clickhouse__database=ch_database,
    )

    assert done.returncode == 2, done.stderr[-3000:]
    assert f"the jars directory {tmp_path / 'no-jars'} does not exist" in done.stderr
    assert "cdfbridge-stack fetch spark" in done.stderr
    assert "--reader auto" in done.stderr
