"""The local S3 server's keys: made once, kept private, and pointed at, never printed."""

import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stack.cli import main
from stack.s3 import S3
from stack.settings import StackSettings


def test_keys_are_generated_once_and_readable_only_by_their_owner(tmp_path: Path) -> None:
    server = S3(StackSettings(home=tmp_path))

    first = server.credentials()

    assert server.credentials() == first
    for path in (server.access_key_path, server.secret_key_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.fixture
def running(tmp_path: Path) -> Iterator[S3]:
    """An S3 service whose PID file names a live process carrying its directory, as the
    stack's own processes do (stack/process.py checks both)."""
    server = S3(StackSettings(home=tmp_path))
    server.dir.mkdir(parents=True, exist_ok=True)
    idle = [sys.executable, "-c", "import time; time.sleep(60)", str(server.dir)]
    process = subprocess.Popen(idle)
    server.pid_path.write_text(str(process.pid))
    # A process still inside execve has an empty command line: wait until it shows.
    deadline = time.monotonic() + 10
    while server.pid() is None:
        assert time.monotonic() < deadline, "the idle process never showed its command line"
        time.sleep(0.01)
    yield server
    process.kill()
    process.wait()


def test_env_points_at_the_keys_of_a_running_s3_without_printing_them(
    tmp_path: Path,
    running: S3,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path))
    _, secret = running.credentials()

    assert main(["env"]) == 0

    out = capsys.readouterr().out
    assert "CDFBRIDGE_STORAGE__ENDPOINT=http://127.0.0.1:9300" in out
    assert f'CDFBRIDGE_STORAGE__SECRET_ACCESS_KEY="$(cat {tmp_path}/s3/secret_access_key)"' in out
    assert secret not in out


def test_env_says_nothing_of_s3_before_it_was_set_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path))

    assert main(["env"]) == 0

    assert "STORAGE" not in capsys.readouterr().out


def test_env_leaves_out_an_s3_that_is_set_up_but_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path))
    S3(StackSettings()).credentials()

    assert main(["env"]) == 0

    assert "STORAGE" not in capsys.readouterr().out
