"""Spark's and Delta's failures are sorted on their error conditions and Java classes, never
on their text: which mean versions gone, a schema change, or a lost Spark driver."""

from collections.abc import Iterable

import pytest
from py4j.protocol import Py4JNetworkError

from producer.spark_errors import driver_lost
from services.spark_errors import Causes


def made_of(conditions: Iterable[str] = (), classes: Iterable[str] = ()) -> Causes:
    return Causes(frozenset(conditions), frozenset(classes))


@pytest.mark.parametrize(
    ("found", "unavailable", "schema"),
    [
        (made_of({"DELTA_MISSING_CHANGE_DATA"}), True, False),
        (made_of({"DELTA_VERSION_NOT_FOUND"}), True, False),
        (made_of({"DELTA_VERSIONS_NOT_CONTIGUOUS"}), True, False),
        (made_of({"DELTA_LOG_FILE_NOT_FOUND"}), True, False),
        (made_of({"DELTA_FILE_NOT_FOUND"}), True, False),
        (made_of({"FAILED_READ_FILE.FILE_NOT_EXIST"}), True, False),
        (
            made_of(classes={"org.apache.spark.SparkException", "java.io.FileNotFoundException"}),
            True,
            False,
        ),
        (made_of({"DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE"}), False, True),
        (made_of({"DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_DATA_SCHEMA"}), False, True),
        (made_of({"DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS"}), False, True),
        # Conditions that only sound alike, and other failures: neither.
        (made_of({"DELTA_CANNOT_CHANGE_DATA_TYPE"}), False, False),
        (made_of({"FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH"}), False, False),
        (made_of({"DELTA_TABLE_NOT_FOUND"}), False, False),
        (made_of(classes={"java.lang.IllegalStateException"}), False, False),
        (made_of(), False, False),
    ],
)
def test_delta_errors_are_sorted_by_condition_and_java_class(
    found: Causes, unavailable: bool, schema: bool
) -> None:
    assert (found.versions_unavailable, found.schema_changed) == (unavailable, schema)


@pytest.mark.parametrize(
    ("error", "found", "stopped", "cause"),
    [
        (
            RuntimeError("job aborted"),
            made_of(classes={"java.lang.OutOfMemoryError"}),
            False,
            "java.lang.OutOfMemoryError",
        ),
        (RuntimeError("job 6 cancelled"), made_of(), True, "SparkContext was shut down"),
        (
            Py4JNetworkError("Answer from Java side is empty"),
            made_of(),
            False,
            "Answer from Java side is empty",
        ),
        (ConnectionRefusedError(111, "Connection refused"), made_of(), False, "Connection refused"),
    ],
)
def test_a_dead_or_dying_driver_is_recognised(
    error: BaseException, found: Causes, stopped: bool, cause: str
) -> None:
    assert cause in (driver_lost(error, found, lambda: stopped) or "")


@pytest.mark.parametrize(
    "error",
    [
        ValueError("no such column: id"),
        RuntimeError("[DELTA_MISSING_CHANGE_DATA] version 0"),
        # Text alone says nothing: no OutOfMemoryError behind it, and the context runs.
        RuntimeError("Job aborted: java.lang.OutOfMemoryError: Java heap space"),
        RuntimeError("Job 6 cancelled because SparkContext was shut down"),
    ],
)
def test_other_errors_are_left_as_they_are(error: BaseException) -> None:
    assert driver_lost(error, made_of(), lambda: False) is None


def test_a_driver_lost_outside_a_read_is_named_for_exit_code_3() -> None:
    """A table of a lake whose start (its Delta log's load, say) finds the driver gone: the
    raw py4j error would reach the user as a traceback, with exit code 1."""
    from typing import Any, cast

    from producer.errors import SparkDriverLostError
    from producer.lake.lake import named
    from schemas.errors import ConfigError
    from services.cli import exit_code

    raw = Py4JNetworkError("Answer from Java side is empty")
    found = named(raw, cast(Any, None))  # a py4j error is known without asking the session

    assert isinstance(found, SparkDriverLostError)
    assert found.__cause__ is raw
    assert exit_code(found) == 3
    assert "while reading versions" not in str(found)
    ours = ConfigError("named already")
    assert named(ours, cast(Any, None)) is ours
