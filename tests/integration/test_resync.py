"""Resync: one table re-snapshotted into a new generation of its topic while the producer's
other tables flow, then its ClickHouse table rebuilt from that generation."""

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from consumer.group.loop import Pipeline
from consumer.rebuild.steps import rebuild
from consumer.status import status
from producer.resync import resync_command as resync
from services.progress_topic import Progress
from services.settings import KafkaConfig
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_many_tables import (
    _drop_a_column,
    _failures,
    _lake_file,
    _run_into,
    _wait_for,
    lake,
)
from tests.integration.test_producer_recovery import wait_for_messages
from tests.producer_helpers import read_topic
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_a_table_failing_on_a_schema_change_is_resynced_and_rebuilt_while_another_flows(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    tables = lake(tmp_path, "ab", rows=20)
    (flowing, _), (resynced, _) = tables["a"], tables["b"]
    topics = {"a": unique("lake_a"), "b": unique("lake_b")}
    entries = [
        {"table": flowing, "primary_key": "id", "topic": topics["a"]},
        {"table": resynced, "primary_key": "id", "topic": topics["b"]},
    ]
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    stop, raised = threading.Event(), list[BaseException]()
    producer = threading.Thread(target=_run_into, args=(endpoints, entries, spark, stop, raised))
    producer.start()
    try:
        wait_for_messages(endpoints, topics["b"], at_least=20)
        before = len(read_topic(endpoints, topics["b"]))
        _drop_a_column(resynced)  # a change the producer refuses to follow: b fails
        _wait_for(lambda: _failures(topics["b"]) >= 1, "table b to fail")
        latest, rows = _latest(resynced)

        asked = resync.request(kafka, topics["b"], wait_s=0)  # ask, and go on at once
        newest = Generator(flowing, seed=9).commit("insert", rows=7)  # a flows meanwhile
        flowing_progress = Progress(kafka, topics["a"])
        _wait_for(lambda: flowing_progress.last_version() == newest, "table a's commit")
        b_progress = Progress(kafka, topics["b"])  # the request taken, however soon
        _wait_for(lambda: b_progress.read().generation.number >= 1, "b's new generation")
        taken = b_progress.read()

        assert asked.requested == 1 and asked.generation.number == 0
        assert taken.generation.number == 1 and taken.version == latest
        assert set(taken.generation.start) == {0, 1, 2}
        assert sum(taken.generation.start.values()) >= before  # after every older message
        assert flowing_progress.read().generation.number == 0  # a was never resynced
        # The gauge is cleared after the snapshot's transaction, which the request saw end.
        gauge, labels = "cdfbridge_producer_table_failed", {"topic": topics["b"]}
        _wait_for(lambda: REGISTRY.get_sample_value(gauge, labels) == 0, "b not failed", 30)
    finally:
        stop.set()
        producer.join(60)
    assert not producer.is_alive() and raised == []

    snapshot = [r for r in read_topic(endpoints, topics["b"]) if _in(taken.generation.start, r)]
    assert {r.value["_change_type"] for r in snapshot if r.value} == {"snapshot"}
    assert len(snapshot) == rows and all("age" not in (r.value or {}) for r in snapshot)
    into = consumer_settings(endpoints, topics["a"], ch_database, table="a")
    Pipeline(into, until_caught_up=True).run()
    done = rebuild(consumer_settings(endpoints, topics["b"], ch_database, table="b"))
    assert done.generation == 1 and done.rows == rows  # the snapshot's rows alone
    for name, path in (("a", flowing), ("b", resynced)):
        report = verify(_verify_settings(endpoints, ch_database, path, topics[name], name))
        assert report.equal, report.render()

    # With no producer to take it, a second request joins the first instead of asking again.
    first, joined = (resync.request(kafka, topics["b"], wait_s=0) for _ in range(2))
    assert first.requested == joined.requested == 2 and joined.generation.number == 1


def test_resync_by_the_command_rebuilds_a_table_that_drifted_from_its_topic(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    (path, last), topic = lake(tmp_path, "c", rows=30)["c"], unique("resync_c")
    config = _lake_file(tmp_path, endpoints, [{"table": path, "primary_key": "id", "topic": topic}])
    follower = subprocess.Popen(
        _producer(config), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_for(
            lambda: Progress({"bootstrap.servers": endpoints.kafka}, topic).last_version() == last,
            "the table to be published",
        )
        into = consumer_settings(endpoints, topic, ch_database, table="c")
        Pipeline(into, until_caught_up=True).run()
        # A row the lake never had: the target drifted (a manual insert, say).
        target = f"`{ch_database}`.c"
        clickhouse.command(
            f"INSERT INTO {target} SELECT * REPLACE ('ghost' AS id) FROM {target} LIMIT 1"
        )
        assert not verify(_verify_settings(endpoints, ch_database, path, topic, "c")).equal

        asked = subprocess.run(
            [*_producer(config), "resync", "--wait", "120"], capture_output=True, timeout=180
        )

        assert asked.returncode == 0, asked.stderr.decode()[-2000:]
        printed = asked.stdout.decode()
        assert f"{topic}: generation 1 published, snapshot at version {last}" in printed
        assert f"cdfbridge-consumer --topic {topic} rebuild" in printed
    finally:
        follower.terminate()
        assert follower.wait(60) == 0
    before = "\n".join(status(into).lines())
    assert rebuild(into).generation == 1
    after = "\n".join(status(into).lines())
    report = verify(_verify_settings(endpoints, ch_database, path, topic, "c"))
    assert report.equal, report.render()
    assert "topic generation 1 (starts at 0: " in before and "topic generation 1" in after
    assert (
        f"holds generation 0, from before a resync: rebuild it (cdfbridge-consumer --topic {topic} rebuild)"
        in before
    )
    assert "rebuild it" not in after


def test_resync_of_a_topic_nothing_was_published_to_exits_2_naming_it(
    endpoints: Endpoints, tmp_path: Path
) -> None:
    topic = unique("never_published")
    config = _lake_file(
        tmp_path, endpoints, [{"table": "/nowhere", "primary_key": "id", "topic": topic}]
    )

    asked = subprocess.run([*_producer(config), "resync"], capture_output=True, timeout=120)

    assert asked.returncode == 2
    message = asked.stderr.decode()
    assert f"nothing was published to {topic} yet" in message and "Traceback" not in message


def _in(start: dict[int, int], record: Any) -> bool:
    return bool(record.offset >= start[record.partition])


def _latest(path: str) -> tuple[int, int]:
    """The table's latest version and its rows then."""
    from deltalake import DeltaTable

    table = DeltaTable(path)
    return int(table.version()), table.to_pyarrow_table().num_rows


def _producer(config: Path) -> list[str]:
    return [sys.executable, "-m", "producer", "--config", str(config)]


def _verify_settings(
    endpoints: Endpoints, database: str, path: str, topic: str, table: str
) -> VerifySettings:
    return VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"table": path, "topic": topic, "clickhouse_table": table},
    )
