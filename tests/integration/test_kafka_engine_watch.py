"""`kafka-engine-ddl --watch`: the Kafka engine follows a column added and a resync with no
command run by hand, reports its health, and stops on SIGTERM with exit 0; a resync that
lands between a plan and its apply is applied with the new generation's schema."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from consumer.kafka_engine import plan as kafka_engine_plan
from schemas.errors import CdfBridgeError
from schemas.target import Target
from services.table_marks import held
from tests.conftest import free_port
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env, verify_settings
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_column_mapping import create_mapped
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _equal(endpoints: Endpoints, database: str, path: str) -> bool:
    try:
        return bool(verify(verify_settings(endpoints, database, path, latest=True)).equal)
    except CdfBridgeError:  # no table yet
        return False


def _health(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _until(
    condition: Callable[[], bool], what: str, said: Callable[[], str], timeout_s: float = 180
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {timeout_s} s; {said()}"
        time.sleep(1)


def test_the_watch_follows_a_new_column_and_a_resync_by_itself(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mapped = str(tmp_path / "mapped")
    create_mapped(spark, mapped)
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('1', 'ann', 30), ('2', 'bob', 40)")
    topic = publish(spark, endpoints, mapped, "id", until_version=1)
    consumer_env(monkeypatch, endpoints, ch_database)
    port = free_port()
    env = {
        **os.environ,
        "CDFBRIDGE_CONSUMER__REBUILD": "auto",
        "CDFBRIDGE_CONSUMER__KAFKA_ENGINE_WATCH_SECONDS": "2",
        "CDFBRIDGE_CONSUMER__METRICS_PORT": str(port),
    }
    command = [sys.executable, "-m", "consumer", "--topic", topic, "--group", f"{topic}-g"]
    command += ["--table", "t", "kafka-engine-ddl", "--watch"]
    log = tmp_path / "watch.log"
    with log.open("wb") as out:
        watcher = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=out)

    def said() -> str:  # for the failure messages
        return log.read_text()[-3000:]

    try:
        _until(lambda: _equal(endpoints, ch_database, mapped), "equal", said)
        assert _health(port)[0] == 200

        spark.sql(f"ALTER TABLE delta.`{mapped}` ADD COLUMNS (city STRING)")
        spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('5', 'eve', 25, 'Oslo')")
        publish(spark, endpoints, mapped, "id", topic=topic, until_version=3)
        _until(lambda: _equal(endpoints, ch_database, mapped), "equal with city", said)

        spark.sql(f"ALTER TABLE delta.`{mapped}` RENAME COLUMN name TO full_name")  # 4
        spark.sql(f"DELETE FROM delta.`{mapped}` WHERE id = '2'")
        resync = {"on_incompatible_change": "resync"}
        publish(spark, endpoints, mapped, "id", topic=topic, until_version=5, **resync)
        target = Target(ch_database, "t")
        _until(lambda: held(clickhouse, target) == 1, "rebuilt for generation 1", said)
        _until(lambda: _equal(endpoints, ch_database, mapped), "equal after the resync", said)
        assert _health(port) == (200, "ok\n")

        # A message the engine cannot parse is a row missing from the table: not healthy.
        garbage = Producer({"bootstrap.servers": endpoints.kafka})
        garbage.produce(topic, b"not avro", b"k")
        garbage.flush(10)
        _until(lambda: "errors table" in _health(port)[1], "unhealthy", said)
        assert _health(port)[0] == 503
    finally:
        watcher.send_signal(signal.SIGTERM)
        code = watcher.wait(60)
    assert code == 0, said()


def test_a_plan_made_before_a_resync_is_applied_with_the_new_generations_schema(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    """The watch plans, then applies; a resync that lands in between makes the apply
    rebuild the table for the new generation, whose schema the plan does not have."""
    mapped = str(tmp_path / "mapped")
    create_mapped(spark, mapped)
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('1', 'ann', 30), ('2', 'bob', 40)")
    topic = publish(spark, endpoints, mapped, "id", until_version=1)
    into = consumer_settings(endpoints, topic, ch_database, table="t", rebuild="auto")
    group = f"{topic}-clickhouse"
    kafka_engine_plan.apply(into, kafka_engine_plan.plan(into, group))
    _until(lambda: _equal(endpoints, ch_database, mapped), "equal", lambda: "")
    stale = kafka_engine_plan.plan(into, group)  # generation 0's schema

    spark.sql(f"ALTER TABLE delta.`{mapped}` RENAME COLUMN name TO full_name")  # 2
    spark.sql(f"DELETE FROM delta.`{mapped}` WHERE id = '2'")
    resync = {"on_incompatible_change": "resync"}
    publish(spark, endpoints, mapped, "id", topic=topic, until_version=3, **resync)
    kafka_engine_plan.apply(into, stale)

    _until(lambda: _equal(endpoints, ch_database, mapped), "equal after the resync", lambda: "")
    columns = clickhouse.query(
        "SELECT name FROM system.columns WHERE database = {db:String} AND table = 't'",
        parameters={"db": ch_database},
    ).result_rows
    assert "name" not in [name for (name,) in columns]
