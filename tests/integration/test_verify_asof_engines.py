"""Drift made by hand is found by key in a Kafka-engine table (its own consumer group tells
the version it holds whole), in a two-shard cluster table, read and repaired through its
Distributed table, and in an S3 table that ClickHouse reads itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main as consumer_main
from consumer.group.loop import Pipeline
from stack.cluster import CLUSTER
from tests.conftest import unique
from tests.endpoints import Endpoints, ObjectStore
from tests.integration.cluster_support import on_cluster, shard_clients
from tests.integration.consumer_support import consumer_env
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_many_tables import _wait_for
from tests.integration.test_object_storage import finished, producer, run_verify, write
from tests.integration.test_verify_asof import DRIFTED, as_of, people
from verify.asof_check import prepare
from verify.consumed import Consumed
from verify.kafka_looks import KafkaLooks
from verify.rounds import once
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def tamper(clients: list[Any], table: str, extra: str) -> None:
    """The three drifts, each on every server given (a key's rows live on one shard)."""
    sync = "SETTINGS mutations_sync = 2"
    for client in clients:
        client.command(f"ALTER TABLE {table} DELETE WHERE id = '1' {sync}")
        client.command(f"ALTER TABLE {table} UPDATE name = 'nobody' WHERE id = '3' {sync}")
    clients[0].command(
        f"INSERT INTO {extra} (id, name, age, _change_type, _commit_version, _commit_timestamp) "
        "VALUES ('9', 'ghost', 1, 'insert', 3, now64())"
    )


def test_drift_in_a_kafka_engine_table_is_found_by_key(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = people(spark, endpoints, tmp_path)
    consumer_env(monkeypatch, endpoints, ch_database)
    group = unique("engine")
    ddl = ["--topic", topic, "--group", group, "--table", "by_kafka", "kafka-engine-ddl"]
    assert consumer_main([*ddl, "--apply"]) == 0
    engine_group = f"{group}-clickhouse"  # the group the engine's Kafka table reads with
    settings = as_of(
        endpoints, ch_database, topic, engine_group, table=path, clickhouse_table="by_kafka"
    )
    _wait_for(lambda: _consumed(settings), "the engine's group to consume version 4")
    [report] = once(settings)
    assert report.equal, report.render()

    name = prepare(settings, clickhouse).target.name
    tamper([clickhouse], name, name)
    [report] = once(settings)
    assert (report.lost_keys, report.extra_keys, report.wrong_keys) == DRIFTED, report.render()


def test_drift_in_a_cluster_table_is_found_by_key_and_repaired_through_the_distributed_table(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    clickhouse_cluster: tuple[str, ...],
    cluster_database: str,
) -> None:
    database, urls = cluster_database, clickhouse_cluster
    path, topic = people(spark, endpoints, tmp_path)
    group = unique("group")
    into = consumer_settings(endpoints, topic, database, group=group, table="people")
    Pipeline(on_cluster(into, urls, database), until_caught_up=True).run()
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": urls[0], "database": database, "cluster": CLUSTER},
        verify={
            "table": path,
            "topic": topic,
            "group": group,
            "as_of": True,
            "clickhouse_table": "people",
        },
    )
    shards = shard_clients(urls)
    target = prepare(settings, shards[0]).target
    tamper(shards, target.local.name, target.name)
    [report] = once(settings)
    assert (report.lost_keys, report.extra_keys, report.wrong_keys) == DRIFTED, report.render()

    repaired = settings.model_copy(
        update={"verify": settings.verify.model_copy(update={"repair": True})}
    )
    [report] = once(repaired)
    assert report.equal, report.render()


def _consumed(settings: VerifySettings) -> bool:
    s = settings.verify
    looks = KafkaLooks(settings.kafka.client_config())
    try:
        return Consumed(looks, s.topic_name, s.group).version() == 4
    finally:
        looks.close()


def test_an_s3_table_is_read_by_clickhouse_itself_and_its_drift_found(
    endpoints: Endpoints, object_store: ObjectStore, ch_database: str, clickhouse: Any
) -> None:
    uri, topic, group = object_store.uri(), unique("cdc"), unique("group")
    last = write(object_store, uri, ("insert", "update", "insert", "delete"), rows=50)
    code, errors = finished(
        producer(endpoints, object_store, uri, topic, "--until-version", str(last))
    )
    assert code == 0, errors
    into = consumer_settings(endpoints, topic, ch_database, group=group)
    Pipeline(into, until_caught_up=True).run()
    args = ["--table", uri, "--topic", topic, "--group", group, "--as-of", "--json"]

    done = run_verify(endpoints, object_store, ch_database, *args)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["equal"], done.stdout + done.stderr
    assert report["reader"] == "ClickHouse", "the lake read by ClickHouse, not staged"
    assert report["delta"]["rows"] > 0

    key = str(clickhouse.command(f"SELECT min(id) FROM {into.target().current_view}"))
    sync = "SETTINGS mutations_sync = 2"
    clickhouse.command(f"ALTER TABLE {into.target().name} DELETE WHERE id = '{key}' {sync}")
    done = run_verify(endpoints, object_store, ch_database, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert json.loads(done.stdout)["lost_keys"] == [{"id": key}]
