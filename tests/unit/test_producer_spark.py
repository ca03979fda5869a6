"""The producer's Spark session: its jars default to the stack's without importing the stack,
and a master that does not answer is retried with back-off, then named."""

from pathlib import Path
from typing import Any

import pytest

from services.service_errors import SparkUnavailableError
from services.spark_master import start_with_retries
from services.spark_session import SparkSection
from stack.fetch import lib_dir
from stack.settings import StackSettings
from tests.conftest import free_port


def test_the_jars_default_to_the_stacks_spark_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CDFBRIDGE_STACK_HOME", raising=False)

    assert SparkSection().jars_dir == lib_dir(StackSettings(), "spark")


def test_the_jars_follow_the_stacks_state_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path / "state"))

    assert SparkSection().jars_dir == tmp_path / "state" / "lib" / "spark"
    assert SparkSection().jars_dir == lib_dir(StackSettings(), "spark")


def test_jars_dir_set_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CDFBRIDGE_STACK_HOME", str(tmp_path / "state"))

    assert SparkSection(jars_dir=tmp_path / "mine").jars_dir == tmp_path / "mine"


def test_a_master_that_does_not_answer_is_named_after_the_attempts() -> None:
    master = f"spark://127.0.0.1:{free_port()}"

    def start() -> Any:
        raise AssertionError("the probe fails first: Spark is never asked")

    with pytest.raises(SparkUnavailableError, match=rf"{master} did not answer after 2 attempts"):
        start_with_retries(master, start, attempts=2)


def test_a_session_that_fails_to_start_is_retried() -> None:
    tries: list[int] = []
    session = object()

    def start() -> Any:
        tries.append(1)
        if len(tries) == 1:
            raise ConnectionRefusedError(111, "Connection refused")
        return session

    assert start_with_retries("local[*]", start, attempts=3) is session
    assert len(tries) == 2
