"""The producer's Spark session: its jars default to the stack's without importing the stack,
and a master that does not answer is retried with back-off, then named. The chunks' Arrow
memory pool."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from producer.run import POOL_VARIABLE, _arrow_pool
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


@pytest.fixture
def arrow_pool() -> Iterator[None]:
    """The process's Arrow pool, put back after the test."""
    before = pa.default_memory_pool()
    yield
    pa.set_memory_pool(before)


@pytest.mark.usefixtures("arrow_pool")
def test_the_chunks_arrow_memory_comes_from_the_c_librarys_allocator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(POOL_VARIABLE, raising=False)
    pa.set_memory_pool(pa.mimalloc_memory_pool())

    _arrow_pool()

    assert pa.default_memory_pool().backend_name == "system"


@pytest.mark.usefixtures("arrow_pool")
def test_a_pool_named_in_the_environment_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POOL_VARIABLE, "mimalloc")
    pa.set_memory_pool(pa.mimalloc_memory_pool())

    _arrow_pool()

    assert pa.default_memory_pool().backend_name == "mimalloc"
