"""Delta tables on a real S3 server (the stack's MinIO, or CDFBRIDGE_STORAGE__*): delta-rs
writes them, the producer reads them through S3A (in-process Spark and a standalone
cluster), the consumer fills ClickHouse, and `cdfbridge-verify` reads them back from S3."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from consumer.group.loop import Pipeline
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints, ObjectStore
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_producer_recovery import wait_for_messages
from tests.producer_helpers import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EVERY_KIND = ("insert", "update", "merge", "delete", "insert", "merge")


def write(store: ObjectStore, uri: str, operations: tuple[str, ...], rows: int) -> int:
    """Commits to the S3 table with delta-rs; returns its last version."""
    generator = Generator(uri, seed=7, storage_options=store.storage.delta_rs_options())
    last = 0
    for operation in operations:
        last = generator.commit(operation, rows)
    return last


def environment(endpoints: Endpoints, store: ObjectStore | None) -> dict[str, str]:
    return {
        **os.environ,
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
        "CDFBRIDGE_CLICKHOUSE__URL": endpoints.clickhouse,
        **(store.env() if store else {}),
    }


def producer(
    endpoints: Endpoints, store: ObjectStore | None, uri: str, topic: str, *flags: str
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "producer", "--table", uri, "--primary-key", "id"]
    command += ["--topic", topic, "--metrics-port", "0", *flags]
    return subprocess.Popen(
        command,
        env=environment(endpoints, store),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def finished(process: subprocess.Popen[bytes], timeout_s: float = 240) -> tuple[int, str]:
    try:
        code = process.wait(timeout_s)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return code, process.stderr.read().decode() if process.stderr else ""


def run_verify(
    endpoints: Endpoints, store: ObjectStore | None, database: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """cdfbridge-verify as a process, with the same storage settings as the producer."""
    return subprocess.run(
        [sys.executable, "-m", "verify", *args],
        env={**environment(endpoints, store), "CDFBRIDGE_CLICKHOUSE__DATABASE": database},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def verify(
    endpoints: Endpoints, store: ObjectStore | None, uri: str, topic: str, database: str, *args: str
) -> bool:
    """Whether cdfbridge-verify finds ClickHouse equal to the table (waiting up to 30 s)."""
    done = run_verify(
        endpoints, store, database, "--table", uri, "--topic", topic, "--wait", "30", *args
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.rstrip().endswith("equal")


def test_s3_table_replicates_and_verify_reads_it_back_from_s3(
    endpoints: Endpoints, object_store: ObjectStore, ch_database: str
) -> None:
    uri, topic = object_store.uri(), unique("cdc")
    last = write(object_store, uri, EVERY_KIND, rows=200)

    code, errors = finished(
        producer(endpoints, object_store, uri, topic, "--until-version", str(last))
    )
    assert code == 0, errors
    Pipeline(consumer_settings(endpoints, topic, ch_database), until_caught_up=True).run()

    assert verify(endpoints, object_store, uri, topic, ch_database)


def test_kill_9_and_an_s3_restart_leave_no_gap_and_no_duplicate(
    endpoints: Endpoints, object_store: ObjectStore
) -> None:
    uri, topic = object_store.uri(), unique("cdc")
    write(object_store, uri, ("insert",) * 12, rows=3000)
    victim = producer(
        endpoints, object_store, uri, topic, "--until-version", "24", "--max-rows-per-chunk", "3000"
    )
    wait_for_messages(endpoints, topic, at_least=4000)  # inside the second chunk's transaction
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(30)
    follower = producer(endpoints, object_store, uri, topic, "--until-version", "24")
    wait_for_messages(endpoints, topic, at_least=12 * 3000)
    if object_store.restart is not None:
        object_store.restart()  # while the follower polls the table's log
    last = write(object_store, uri, ("insert",) * 12, rows=3000)
    assert last == 24

    code, errors = finished(follower)

    assert code == 0, errors
    seen = Counter(
        (r.key["id"], r.value["_commit_version"]) for r in read_topic(endpoints, topic) if r.value
    )
    assert len(seen) == 24 * 3000
    assert max(seen.values()) == 1


def test_producer_on_a_standalone_cluster_reads_an_s3_table(
    endpoints: Endpoints, object_store: ObjectStore, spark_cluster: str, ch_database: str
) -> None:
    uri, topic = object_store.uri(), unique("cdc")
    last = write(object_store, uri, EVERY_KIND, rows=200)

    code, errors = finished(
        producer(
            endpoints,
            object_store,
            uri,
            topic,
            "--until-version",
            str(last),
            "--master",
            spark_cluster,
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.cores.max=1",
        )
    )

    assert code == 0, errors
    logs = executor_logs("cdfbridge-producer")
    assert logs
    secret = object_store.env().get("CDFBRIDGE_STORAGE__SECRET_ACCESS_KEY", "no secret given")
    assert not [log for log in logs if secret in log.read_text(errors="replace")]
    Pipeline(consumer_settings(endpoints, topic, ch_database), until_caught_up=True).run()
    assert verify(endpoints, object_store, uri, topic, ch_database)


def executor_logs(app: str) -> list[Path]:
    """The logs of the executors the worker ran for the master's last application named app
    (each executor's directory also holds the jars it fetched from the driver)."""
    from stack.settings import StackSettings
    from stack.spark_cluster import master_state

    settings = StackSettings()
    apps = [a for a in master_state(settings)["completedapps"] if a["name"] == app]
    work = settings.home / "spark-worker" / "work" / apps[-1]["id"]
    return [log for executor in work.iterdir() for log in executor.glob("std*")]
