"""Which failures mean the Spark driver JVM is gone (named as such, exit code 3)."""

import pytest
from py4j.protocol import Py4JNetworkError

from producer.reader import driver_lost


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (RuntimeError("Job aborted: java.lang.OutOfMemoryError: Java heap space"), "OutOfMemory"),
        (RuntimeError("Job 6 cancelled because SparkContext was shut down"), "shut down"),
        (Py4JNetworkError("Answer from Java side is empty"), "Answer from Java side is empty"),
        (ConnectionRefusedError(111, "Connection refused"), "Connection refused"),
    ],
)
def test_a_dead_or_dying_driver_is_recognised(error: BaseException, cause: str) -> None:
    assert cause in (driver_lost(error) or "")


@pytest.mark.parametrize(
    "error",
    [ValueError("no such column: id"), RuntimeError("[DELTA_MISSING_CHANGE_DATA] version 0")],
)
def test_other_errors_are_left_as_they_are(error: BaseException) -> None:
    assert driver_lost(error) is None
