"""The local stack's launcher: idempotent start, durable data, orderly and hard stops."""

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import clickhouse_connect
import pytest

from stack.clickhouse import ClickHouse
from stack.settings import StackSettings
from tests.conftest import free_port
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


@pytest.fixture
def own_clickhouse(tmp_path: Path) -> Iterator[ClickHouse]:
    """A second ClickHouse with its own state directory and ports, so the test may kill it."""
    settings = StackSettings(
        home=tmp_path / "stack",
        clickhouse_http_port=free_port(),
        clickhouse_tcp_port=free_port(),
    )
    service = ClickHouse(settings)
    yield service
    service.stop()


def client(service: ClickHouse) -> Any:
    return clickhouse_connect.get_client(dsn=service.endpoint)


def test_start_twice_keeps_the_running_process(own_clickhouse: ClickHouse) -> None:
    own_clickhouse.start()
    first = own_clickhouse.pid()

    own_clickhouse.start()

    assert first is not None
    assert own_clickhouse.pid() == first
    assert own_clickhouse.status().ready


def test_data_survives_kill_9_and_restart(own_clickhouse: ClickHouse) -> None:
    own_clickhouse.start()
    client(own_clickhouse).command("CREATE TABLE kept (n UInt32) ENGINE = MergeTree ORDER BY n")
    client(own_clickhouse).command("INSERT INTO kept SELECT number FROM numbers(1000)")
    pid = own_clickhouse.pid()
    assert pid is not None

    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert not own_clickhouse.status().ready
    own_clickhouse.start()

    assert client(own_clickhouse).command("SELECT count() FROM kept") == 1000


def test_sigterm_stops_clickhouse_in_order(own_clickhouse: ClickHouse) -> None:
    own_clickhouse.start()

    own_clickhouse.stop(timeout_s=30)

    assert own_clickhouse.pid() is None
    assert "Uninitializing subsystem" in own_clickhouse.log_path.read_text(errors="replace")


def test_status_command_exits_1_and_says_down_when_nothing_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from stack.cli import main

    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path))

    code = main(["status"])

    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert [line.split()[:2] for line in lines] == [
        ["kafka", "down"],
        ["registry", "down"],
        ["clickhouse", "down"],
    ]


def test_status_command_exits_0_when_the_stack_serves_this_run(
    endpoints: Endpoints, capsys: pytest.CaptureFixture[str]
) -> None:
    from stack.cli import main

    code = main(["status"])

    out = capsys.readouterr().out
    # Against services from env vars or containers, the local stack is simply not running.
    assert code == (0 if endpoints.origin == "local stack" else 1), out


def test_down_wipe_stops_the_service_and_it_starts_empty_with_the_jars_kept(
    own_clickhouse: ClickHouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stack.cli import main

    own_clickhouse.start()
    client(own_clickhouse).command("CREATE TABLE gone (n UInt32) ENGINE = MergeTree ORDER BY n")
    jar = own_clickhouse.settings.lib / "kept.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"jar")
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(own_clickhouse.settings.home))

    assert main(["down", "--wipe", "clickhouse"]) == 0

    assert own_clickhouse.pid() is None
    assert not own_clickhouse.dir.exists()
    assert jar.read_bytes() == b"jar"
    own_clickhouse.start()
    assert client(own_clickhouse).command("EXISTS TABLE gone") == 0
