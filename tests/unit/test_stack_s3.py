"""The local S3 server's keys: made once, kept private, and pointed at, never printed."""

import stat
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


def test_env_points_at_the_keys_without_printing_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path))
    _, secret = S3(StackSettings()).credentials()

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
