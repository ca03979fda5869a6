"""Rebuilds that are always complete: a topic whose early offsets are deleted is refused for
a replay and bootstrapped from the lake instead (ClickHouse reading the Delta table at the
last published version, excluded and hashed columns as the producer publishes them), and
the live group goes on after a rebuild from where the new table ends."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from consumer.group.history import HistoryGoneError
from consumer.group.loop import Pipeline
from consumer.kafka_engine import plan as kafka_engine_plan
from consumer.process import run
from consumer.rebuild.steps import rebuild
from consumer.status import status
from services import offsets
from services.lake import LakeUnreadableError
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints, ObjectStore
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_column_policy import POLICY, customers
from tests.integration.test_object_storage import EVERY_KIND, finished, producer, write
from tests.integration.test_object_storage import verify as verify_s3
from tests.integration.test_verify import NULLS, ROW, TYPES
from tests.producer_helpers import append, create_table, publish
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]
# A topic that deletes old segments, as topics made before compaction was the default do.
DELETING = {"topic_config": {"cleanup.policy": "delete", "retention.ms": "604800000"}}
POLICY_COLUMNS = "id STRING, name STRING, email STRING, ssn STRING, phone BIGINT, photo BINARY"


def _verify(endpoints: Endpoints, database: str, path: str, topic: str, **extra: Any) -> None:
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"table": path, "topic": topic, "clickhouse_table": "t", **POLICY},
        **extra,
    )
    report = verify(settings)
    assert report.equal, report.render()


def _delete_history(endpoints: Endpoints, topic: str) -> dict[int, int]:
    """Delete every partition's offsets below its end, as retention deletes old segments;
    returns the new low watermarks."""
    admin = AdminClient({"bootstrap.servers": endpoints.kafka})
    found = offsets.positions({"bootstrap.servers": endpoints.kafka}, unique("probe"), topic)
    asked = [TopicPartition(topic, p.partition, p.high) for p in found if p.high > 0]
    for future in admin.delete_records(asked).values():
        future.result(timeout=30)
    return {p.partition: p.high for p in found}


@pytest.fixture
def gone(spark: Any, endpoints: Endpoints, tmp_path: Any) -> tuple[str, str]:
    """The customers table published with the column policy, then its topic's history
    deleted: (path, topic)."""
    path = str(tmp_path / "customers")
    last = customers(spark, path)
    topic = publish(spark, endpoints, path, "id", until_version=last, **POLICY, **DELETING)
    _delete_history(endpoints, topic)
    return path, topic


def test_a_replay_of_a_topic_without_its_history_is_refused_and_the_lake_fills_it_instead(
    spark: Any, endpoints: Endpoints, gone: tuple[str, str], ch_database: str, clickhouse: Any
) -> None:
    path, topic = gone
    into = consumer_settings(endpoints, topic, ch_database, table="t")

    with pytest.raises(HistoryGoneError, match=r"rebuild --from-lake"):
        rebuild(into, source="topic")
    engine = kafka_engine_plan.plan(into, f"{into.consumer.group}-clickhouse")
    with pytest.raises(HistoryGoneError, match=r"bootstrap"):
        kafka_engine_plan.apply(into, engine)
    assert not clickhouse.command(f"EXISTS TABLE `{ch_database}`.t")  # nothing swapped in
    said = "\n".join(status(into).lines())
    assert "history gone: partition" in said and "rebuild --from-lake" in said
    assert "retention.ms=604800000 deletes history" in said

    done = rebuild(into)  # auto: the topic cannot, the lake can
    assert (done.source, done.version, done.rows) == ("lake", 4, 3)
    _verify(endpoints, ch_database, path, topic)

    # The group the rebuild left follows the changes after the version loaded.
    append(spark, path, [("5", "eve", "eve@example.com", "6", 7, b"\x02")], POLICY_COLUMNS)
    publish(spark, endpoints, path, "id", topic=topic, until_version=5, **POLICY)
    Pipeline(into, until_caught_up=True).run()
    _verify(endpoints, ch_database, path, topic)


def test_a_new_group_on_a_topic_without_its_history_starts_from_the_lake(
    endpoints: Endpoints, gone: tuple[str, str], ch_database: str
) -> None:
    path, topic = gone
    into = consumer_settings(endpoints, topic, ch_database, table="t")

    assert run(into, until_caught_up=True) == []

    _verify(endpoints, ch_database, path, topic)
    committed = offsets.positions(endpoints_config(endpoints), into.consumer.group, topic)
    assert all(p.committed == p.low for p in committed)  # where the history begins now


def test_a_group_whose_offsets_retention_deleted_is_refused_naming_the_rebuild(
    spark: Any, endpoints: Endpoints, tmp_path: Any, ch_database: str
) -> None:
    path = str(tmp_path / "customers")
    customers(spark, path)
    topic = publish(spark, endpoints, path, "id", until_version=2, **POLICY, **DELETING)
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    Pipeline(into, until_caught_up=True).run()
    publish(spark, endpoints, path, "id", topic=topic, until_version=4, **POLICY)
    _delete_history(endpoints, topic)

    with pytest.raises(HistoryGoneError, match=f"group {into.consumer.group}"):
        run(into, until_caught_up=True)

    done = rebuild(into)
    assert done.source == "lake"
    _verify(endpoints, ch_database, path, topic)


def test_a_rebuild_moves_the_live_group_and_refuses_while_it_runs(
    spark: Any, endpoints: Endpoints, tmp_path: Any, ch_database: str
) -> None:
    path = str(tmp_path / "gen")
    generator = Generator(path, seed=3)
    generator.commit("insert", rows=50)
    topic = publish(spark, endpoints, path, "id", until_version=0)
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    Pipeline(into, until_caught_up=True).run()  # the live group, now behind what follows
    last = generator.commit("delete", rows=10)
    publish(spark, endpoints, path, "id", topic=topic, until_version=last)

    done = rebuild(into)

    kafka = endpoints_config(endpoints)
    live = {p.partition: p.committed for p in offsets.positions(kafka, into.consumer.group, topic)}
    ended = {p.partition: p.committed for p in offsets.positions(kafka, done.group, topic)}
    assert live == ended  # the live group goes on from where the new table ends
    Pipeline(into, until_caught_up=True).run()
    _verify_plain(endpoints, ch_database, path, topic)

    runner = subprocess.Popen(
        [sys.executable, "-m", "consumer", "--topic", topic, "--group", into.consumer.group],
        env=_env(endpoints, ch_database),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(lambda: offsets.members(kafka, into.consumer.group) > 0)
        with pytest.raises(Exception, match=f"group {into.consumer.group} is running"):
            rebuild(into)
    finally:
        runner.terminate()
        assert runner.wait(60) == 0


def test_a_table_on_object_storage_is_bootstrapped_from_the_lake(
    endpoints: Endpoints, object_store: ObjectStore, ch_database: str, clickhouse: Any
) -> None:
    uri, topic = object_store.uri("bootstrap"), unique("cdc")
    last = write(object_store, uri, EVERY_KIND, rows=200)
    flags = ("--exclude-columns", "age", "--hash-columns", "name")
    code, errors = finished(
        producer(endpoints, object_store, uri, topic, "--until-version", str(last), *flags)
    )
    assert code == 0, errors
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    into = into.model_copy(update={"storage": object_store.storage})

    done = rebuild(into, source="lake")

    assert (done.source, done.version) == ("lake", last)
    assert verify_s3(
        endpoints, object_store, uri, topic, ch_database, "--clickhouse-table", "t", *flags
    )
    secret = object_store.storage.secret_access_key
    assert secret is not None
    clickhouse.command("SYSTEM FLUSH LOGS")
    logged = clickhouse.query(
        "SELECT query, exception, toString(Settings) FROM system.query_log "
        "WHERE event_time > now() - 600 AND position(query, 'system.query_log') = 0"
    ).result_rows
    text = "\n".join("\n".join(row) for row in logged)
    assert "deltaLake(" in text and "[HIDDEN]" in text
    assert secret.get_secret_value() not in text  # the secret never in the log


def endpoints_config(endpoints: Endpoints) -> dict[str, str]:
    return {"bootstrap.servers": endpoints.kafka}


def _verify_plain(endpoints: Endpoints, database: str, path: str, topic: str) -> None:
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"table": path, "topic": topic, "clickhouse_table": "t"},
    )
    report = verify(settings)
    assert report.equal, report.render()


def _env(endpoints: Endpoints, database: str) -> dict[str, str]:
    import os

    return {
        **os.environ,
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
        "CDFBRIDGE_CLICKHOUSE__URL": endpoints.clickhouse,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__TABLE": "t",
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
        "CDFBRIDGE_CONSUMER__REGISTRY_URL_FOR_CLICKHOUSE": endpoints.registry_for_clickhouse,
    }


def _wait(condition: Any, timeout_s: float = 60) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def test_every_type_loads_from_the_lake_as_the_topic_writes_it(
    spark: Any, endpoints: Endpoints, tmp_path: Any, ch_database: str, clickhouse: Any
) -> None:
    path = str(tmp_path / "types")
    create_table(spark, path, TYPES)
    rows = [ROW.format(id=i) for i in range(3)] + [NULLS.format(id="n")]
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {', '.join(rows)}")
    spark.sql(f"UPDATE delta.`{path}` SET f = 2.5, m = map('c', 3.0) WHERE id = '1'")
    topic = publish(spark, endpoints, path, "id", until_version=2)
    from_lake = consumer_settings(endpoints, topic, ch_database, table="t")
    from_topic = consumer_settings(endpoints, topic, ch_database, table="r", group=unique("g"))

    # ClickHouse reads row n's NULL struct as a struct of NULL fields: refused, not loaded.
    with pytest.raises(LakeUnreadableError, match=r"in st \(1 rows\).*--from-topic"):
        rebuild(from_lake, source="lake")
    shadows = "SELECT count() FROM system.tables WHERE database = {d:String} AND "
    shadows += "startsWith(name, 't__rebuild')"
    assert not clickhouse.command(shadows, parameters={"d": ch_database})

    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 'n'")
    publish(spark, endpoints, path, "id", topic=topic, until_version=3)
    assert rebuild(from_lake, source="lake").source == "lake"
    assert rebuild(from_topic, source="topic").source == "topic"

    _verify_plain(endpoints, ch_database, path, topic)
    columns = clickhouse.query(
        "SELECT name FROM system.columns WHERE database = {d:String} AND table = 't' "
        "AND NOT startsWith(name, '_') ORDER BY position",
        parameters={"d": ch_database},
    ).result_rows
    select = ", ".join(f"toJSONString(`{name}`)" for (name,) in columns)
    read = [
        [
            [json.loads(value) for value in row]  # maps as dicts: their entries' order aside
            for row in clickhouse.query(
                f"SELECT {select} FROM `{ch_database}`.`{table}_current` ORDER BY id"  # noqa: S608
            ).result_rows
        ]
        for table in ("t", "r")
    ]
    assert len(columns) == 11 and len(read[0]) == 3
    assert read[0] == read[1]  # the lake's rows are the topic's, column for column
