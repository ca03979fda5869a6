"""Spark's and Delta's errors while following a table, as errors that say what to do:
versions no longer available, a schema change Delta will not read across, a Spark driver
that died. Told apart by error conditions and Java classes (services/spark_errors.py), never
by message text; the object store's failures are named by run() (services/storage_errors.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from producer.errors import SchemaChangeError, SparkDriverLostError, VersionUnavailableError
from schemas.errors import CdfBridgeError
from services.spark_errors import OUT_OF_MEMORY, Causes, causes, context_stopped, first_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@contextmanager
def reading(table: str, first: int, last: int) -> Iterator[None]:
    """Delta's errors reading versions first..last of table, as errors that say what to do."""
    try:
        yield
    except CdfBridgeError:
        raise  # ours say what to do already
    except Exception as exc:
        found = causes(exc)
        if found.versions_unavailable:
            raise VersionUnavailableError(table, first, first_line(exc)) from exc
        if found.schema_changed:
            raise SchemaChangeError(table, last, first_line(exc)) from exc
        raise


def lost_driver(
    exc: BaseException, spark: SparkSession, from_version: int | None
) -> SparkDriverLostError | None:
    """exc as SparkDriverLostError when the Spark driver is gone, else None."""
    lost = driver_lost(exc, causes(exc), lambda: context_stopped(spark))
    return None if lost is None else SparkDriverLostError(from_version, lost)


def driver_lost(exc: BaseException, found: Causes, stopped: Callable[[], bool]) -> str | None:
    """Why the Spark driver is gone, if it is (None: it is not): py4j lost the JVM, the JVM
    ran out of memory (found among exc's Java causes), or the SparkContext is stopped."""
    from py4j.protocol import Py4JNetworkError

    if isinstance(exc, Py4JNetworkError | ConnectionError):
        return first_line(exc)
    if found.out_of_memory:
        return OUT_OF_MEMORY
    if stopped():
        return "its SparkContext was shut down, or its JVM no longer answers"
    return None
