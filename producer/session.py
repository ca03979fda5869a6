"""The producer's Spark session, begun as soon as its settings are valid.

The driver JVM takes seconds to start (docs/performance.md, "Where a start goes"). `SessionStart`
begins it in a thread of its own before the rest of the producer is imported, so the JVM
boots while the main thread imports and sets up Kafka's side; `run()` takes it from there.

Every Spark call from Python is a py4j round trip over a socket, and the thread it returns
to must take the GIL back: with CPython's default switch interval (5 ms) it waits up to
that long whenever another thread runs Python, hundreds of times over while a session
starts and a table's log is loaded and its first read planned. The producer runs with a
shorter one (`shorter_gil_turns`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING

from producer.settings import ProducerSettings
from services.spark_session import session_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APP_NAME = "cdfbridge-producer"
# Several tables share one session: Spark's FAIR scheduler takes their jobs' tasks in turns.
FAIR = {"spark.scheduler.mode": "FAIR"}
# The first table's first chunk published 0.3-0.5 s sooner with it in alternated runs of a
# cold start (docs/performance.md, "Where a start goes").
GIL_SWITCH_S = 0.0005


def shorter_gil_turns() -> None:
    """A thread running Python hands the GIL over after GIL_SWITCH_S, not 5 ms."""
    sys.setswitchinterval(GIL_SWITCH_S)


def session(settings: ProducerSettings) -> SparkSession:
    """The session the settings say, in Spark's FAIR scheduler unless [spark] conf says
    otherwise."""
    conf = {**FAIR, **settings.spark.conf}
    spark = settings.spark.model_copy(update={"conf": conf})
    return session_for(spark, settings.storage, APP_NAME)


class SessionStart:
    """session(settings), started in a daemon thread at construction. pyspark installs its
    SIGINT handler only from the main thread, so the producer's own handler stays in place."""

    def __init__(self, settings: ProducerSettings) -> None:
        self._began = time.monotonic()
        self._seconds = 0.0
        self._session: SparkSession | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._start, args=(settings,), name="spark-session", daemon=True
        )
        self._thread.start()

    def _start(self, settings: ProducerSettings) -> None:
        try:
            self._session = session(settings)
        except BaseException as exc:  # noqa: BLE001 - result() raises it on the caller's thread
            self._error = exc
        self._seconds = time.monotonic() - self._began

    def result(self) -> tuple[SparkSession, float]:
        """The session and the seconds its start took, once started; raises what its start
        raised (a CdfBridgeError: SparkUnavailableError, a ConfigError)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._session is not None  # noqa: S101 - set unless an error was
        return self._session, self._seconds
