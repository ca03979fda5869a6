"""Rebuilds of one table that run at once, as two consumer processes of one group with
`rebuild = "auto"` start them when the topic's generation changes: each fills and swaps a
shadow table of its own, so neither drops nor marks the other's, and the table ends equal
to the Delta table, marked with the new generation."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from consumer.group.loop import Pipeline
from consumer.rebuild.steps import Rebuilt, rebuild
from producer.resync import resync_command
from services.clickhouse_client import connect
from services.table_marks import held
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_bootstrap import _env
from tests.integration.test_partial_rebuild import _equal
from tests.integration.test_rebuild_kill import _append
from tests.producer_helpers import publish

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _two_generations(spark: Any, endpoints: Endpoints, path: str) -> str:
    """Generation 0: versions 0 and 1 (inserts, then deletes); generation 1: the snapshot at
    version 2. Returns the topic."""
    from deltalake import DeltaTable

    _append(path, range(2_000))
    topic = publish(spark, endpoints, path, "id", until_version=0)
    DeltaTable(path).delete("id % 3 = 0")
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    DeltaTable(path).delete("id % 3 = 1")
    resync_command.request({"bootstrap.servers": endpoints.kafka}, topic, wait_s=0)
    publish(spark, endpoints, path, "id", topic=topic, until_version=2)
    return topic


def test_two_rebuilds_of_one_table_at_once_each_swap_a_whole_table(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    path = str(tmp_path / "orders")
    topic = _two_generations(spark, endpoints, path)
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    Pipeline(into, until_caught_up=True).run()  # the table, generation 0

    done: list[Rebuilt] = []
    failed: list[BaseException] = []

    def one(group: str) -> None:
        try:
            done.append(rebuild(into, group, "topic", move_live=False))
        except BaseException as exc:  # handed to the test
            failed.append(exc)

    both = [threading.Thread(target=one, args=(unique("builder"),)) for _ in range(2)]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join(300)

    assert failed == [] and len(done) == 2
    assert held(connect(into.clickhouse), into.target()) == 1
    assert _equal(endpoints, ch_database, path, topic)


def test_two_consumer_processes_with_auto_rebuild_end_equal_after_a_resync(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "orders")
    _append(path, range(2_000))
    topic = publish(spark, endpoints, path, "id", until_version=0)
    group = unique("group")
    env = {**_env(endpoints, ch_database), "CDFBRIDGE_CONSUMER__REBUILD": "auto"}
    command = [sys.executable, "-m", "consumer", "--topic", topic, "--group", group, "run"]
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    try:
        DeltaTable(path).delete("id % 3 = 0")
        publish(spark, endpoints, path, "id", topic=topic, until_version=1)
        DeltaTable(path).delete("id % 3 = 1")
        resync_command.request({"bootstrap.servers": endpoints.kafka}, topic, wait_s=0)
        publish(spark, endpoints, path, "id", topic=topic, until_version=2)
        into = consumer_settings(endpoints, topic, ch_database, table="t", group=group)
        client, deadline = connect(into.clickhouse), time.monotonic() + 180
        while not (
            held(client, into.target()) == 1 and _equal(endpoints, ch_database, path, topic)
        ):
            assert all(p.poll() is None for p in processes), _stderr(processes)
            assert time.monotonic() < deadline, "not equal within 180 s"
            time.sleep(2)
    finally:
        for process in processes:
            process.terminate()
    assert [_ended(p) for p in processes] == [0, 0], _stderr(processes)


def test_a_sigterm_while_the_table_is_rebuilt_ends_the_consumer(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    """The pipeline made after an automatic rebuild must not miss a stop that came while its
    table was rebuilt (it used to consume on until a second signal)."""
    path = str(tmp_path / "orders")
    _append(path, range(200))
    topic = publish(spark, endpoints, path, "id", until_version=0)
    env = {**_env(endpoints, ch_database), "CDFBRIDGE_CONSUMER__REBUILD": "auto"}
    command = [sys.executable, "-m", "consumer", "--topic", topic, "run"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines: list[str] = []
    rebuilding = threading.Event()

    def read() -> None:  # the log, until the rebuild begins
        assert process.stderr is not None
        for raw in process.stderr:
            lines.append(raw.decode())
            if "rebuilding the table" in lines[-1]:
                rebuilding.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        resync_command.request({"bootstrap.servers": endpoints.kafka}, topic, wait_s=0)
        publish(spark, endpoints, path, "id", topic=topic, until_version=0)  # generation 1
        assert rebuilding.wait(120), "no rebuild within 120 s:\n" + "".join(lines[-40:])
    finally:
        process.terminate()
    assert _ended(process) == 0, "".join(lines[-40:])


def _ended(process: subprocess.Popen[bytes]) -> int | None:
    """Its exit code within 60 s of SIGTERM; None (its log kept for the message) if it
    has not stopped by then, after which it is killed."""
    try:
        return process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)
        return None


def _stderr(processes: list[subprocess.Popen[bytes]]) -> str:
    return "\n".join(
        (p.stderr.read().decode()[-4000:] if p.stderr and p.poll() is not None else "")
        for p in processes
    )
