"""A lake of thirty tables killed with kill -9 while it starts (some tables published, others
still loading their logs or reading their first spans from their files), then started
again: every table resumes where its last transaction left it, with no gap and no
duplicate (key, version)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_many_tables import OPERATIONS, changes_of, published_once
from tests.integration.test_producer_recovery import wait_for_messages

pytestmark = [pytest.mark.integration, pytest.mark.spark]
TABLES = 30


def _producer(endpoints: Endpoints, config: Path, log: Path) -> subprocess.Popen[bytes]:
    """The lake's producer, its log (thirty tables' events: more than a pipe holds) in log."""
    env = {
        **os.environ,
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
    }
    command = [sys.executable, "-m", "producer", "--config", str(config)]
    return subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
        start_new_session=True,  # its Spark JVM is killed with it
    )


def test_a_lake_killed_while_it_starts_resumes_every_table_with_no_gap_and_no_duplicate(
    endpoints: Endpoints, tmp_path: Path
) -> None:
    tables: dict[str, tuple[str, int]] = {}  # topic: (path, last version)
    entries = []
    for i in range(TABLES):
        path, topic = str(tmp_path / f"t{i:02d}"), unique(f"restart{i:02d}")
        generator = Generator(path, seed=i)
        last = max(generator.commit(operation, 200) for operation in OPERATIONS)
        tables[topic] = (path, last)
        entries.append(
            f'[[tables]]\ntable = "{path}"\nprimary_key = "id"\ntopic = "{topic}"\n'
            f"until_version = {last}\n"
        )
    config = tmp_path / "lake.toml"
    config.write_text("[source]\npoll_interval_s = 0.2\nmetrics_port = 0\n\n" + "\n".join(entries))

    victim = _producer(endpoints, config, tmp_path / "killed.log")
    first = next(iter(tables))
    wait_for_messages(endpoints, first, at_least=1, timeout_s=240)  # the first tables publish
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(30)

    again = _producer(endpoints, config, log := tmp_path / "again.log")
    try:
        code = again.wait(300)  # every table reaches its until_version
    finally:
        if again.poll() is None:
            os.killpg(again.pid, signal.SIGKILL)

    assert code == 0, log.read_text(errors="replace")[-3000:]
    for topic, (path, last) in tables.items():
        seen = published_once(endpoints, topic)  # no (key, version) twice
        assert sum(seen.values()) == changes_of(path, last), topic  # and none missing
