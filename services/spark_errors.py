"""Spark's and Delta's errors sorted on their structured parts, never on message text: the
error conditions (`SparkThrowable.getCondition()`, e.g. `DELTA_MISSING_CHANGE_DATA`) and
the Java exception classes in the cause chain behind a Python exception."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MAX_DEPTH = 30  # causes followed at most: Java chains can be long, never endless here

# The change data or log entries of the versions asked for are gone: CDF enabled later, log
# retention, VACUUM, or files deleted by hand.
UNAVAILABLE_CONDITIONS = frozenset(
    {
        "DELTA_MISSING_CHANGE_DATA",
        "DELTA_MISSING_FILES_UNEXPECTED_VERSION",  # a commit file missing in a range read
        "DELTA_FILE_NOT_FOUND",
        "DELTA_FILE_OR_DIR_NOT_FOUND",
        "DELTA_VERSIONS_NOT_CONTIGUOUS",
        "DELTA_VERSION_NOT_FOUND",
        "DELTA_LOG_FILE_NOT_FOUND",
        "DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION",
        "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION",
        "FAILED_READ_FILE.FILE_NOT_EXIST",
    }
)
UNAVAILABLE_CLASSES = frozenset({"java.io.FileNotFoundException"})
# Delta refuses to read changes across a schema change its read schema cannot represent.
SCHEMA_CONDITIONS = frozenset(
    {
        "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE",
        "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_DATA_SCHEMA",
        "DELTA_CHANGELOG_SCHEMA_CHANGE_IN_RANGE",
        "DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS",
        "DELTA_SCHEMA_CHANGED",
        "DELTA_SCHEMA_CHANGED_WITH_VERSION",
        "DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS",
    }
)
OUT_OF_MEMORY = "java.lang.OutOfMemoryError"


@dataclass(frozen=True)
class Causes:
    """What an exception is made of: every error condition and Java class behind it."""

    conditions: frozenset[str]
    classes: frozenset[str]

    @property
    def versions_unavailable(self) -> bool:
        return bool(self.conditions & UNAVAILABLE_CONDITIONS or self.classes & UNAVAILABLE_CLASSES)

    @property
    def schema_changed(self) -> bool:
        return bool(self.conditions & SCHEMA_CONDITIONS)

    @property
    def out_of_memory(self) -> bool:
        return OUT_OF_MEMORY in self.classes


def causes(exc: BaseException) -> Causes:
    """The conditions of pyspark's own errors and of every Java SparkThrowable behind exc,
    and the Java classes."""
    from pyspark.errors import PySparkException

    conditions: set[str] = set()
    classes: set[str] = set()
    for current in _python_chain(exc):
        if isinstance(current, PySparkException) and _java_throwable(current) is None:
            conditions.add(str(current.getCondition()))  # raised by pyspark, not the JVM
    for name, condition in java_chain(exc):
        classes.add(name)
        if condition is not None:
            conditions.add(condition)
    return Causes(frozenset(conditions), frozenset(classes))


def java_classes(exc: BaseException) -> Iterator[str]:
    """Class names of every Java throwable behind exc."""
    return (name for name, _ in java_chain(exc))


def java_chain(exc: BaseException) -> Iterator[tuple[str, str | None]]:
    """(class name, error condition or None) of every Java throwable behind exc: py4j's and
    pyspark's wrappers, and each one's getCause() chain, Python causes included; nothing
    more once the JVM is gone."""
    seen = 0
    for current in _python_chain(exc):
        throwable = _java_throwable(current)
        try:
            while throwable is not None and seen < MAX_DEPTH:
                yield str(throwable.getClass().getName()), _condition(throwable)
                throwable, seen = throwable.getCause(), seen + 1
        except jvm_gone():  # what the JVM held cannot be asked any more
            return


def _condition(throwable: Any) -> str | None:
    try:
        condition = throwable.getCondition()
    except jvm_gone():  # not a SparkThrowable (py4j's error), or the JVM is gone
        return None
    return None if condition is None else str(condition)


def context_stopped(spark: SparkSession) -> bool:
    """Whether the session's SparkContext is stopped, or its JVM no longer answers."""
    jsc = spark.sparkContext._jsc
    try:
        return jsc is None or bool(jsc.sc().isStopped())
    except jvm_gone():
        return True


def jvm_gone() -> tuple[type[Exception], ...]:
    """What a py4j call raises when the JVM does not answer: py4j's errors, and the socket's
    own (its pinned-thread client connects without wrapping ConnectionRefusedError)."""
    from py4j.protocol import Py4JError

    return (Py4JError, ConnectionError)


def _python_chain(exc: BaseException) -> Iterator[BaseException]:
    current: BaseException | None = exc
    for _ in range(MAX_DEPTH):
        if current is None:
            return
        yield current
        current = current.__cause__ or current.__context__


def _java_throwable(exc: BaseException) -> Any:
    """The Java exception a Python one wraps: Py4JJavaError's, or pyspark's CapturedException's."""
    from py4j.protocol import Py4JJavaError

    if isinstance(exc, Py4JJavaError):
        return exc.java_exception
    return getattr(exc, "_origin", None)


def first_line(exc: BaseException) -> str:
    """The first line of an error's text (Spark's run to many), for our messages."""
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
