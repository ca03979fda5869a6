"""The start-up waterfall: each step of a start, until the first chunk is published, logged
as a `startup_step` event with its duration (`ms`) and when it ended (`at_s`, seconds since
the process started), so a slow start shows where its time went:

    {"event": "startup_step", "step": "spark_session", "ms": 5210, "at_s": 5.61, ...}

Kafka's side of a start (producer/lake/startup.py) runs in a thread beside Spark's (the
session, the Delta log), so the steps' durations add up to more than the last `at_s`. At a
process's start it is set up for a group of tables at once: each of them logs the group's
`topics`, `progress` and `kafka_transactions` steps.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from producer import metrics


def _process_started() -> float:
    """time.monotonic() when this process started (Linux's /proc), else now."""
    now = time.monotonic()
    try:
        # Field 22 of /proc/self/stat, the start in clock ticks since boot; the command
        # name (field 2, in parentheses) may hold spaces, so count from its end.
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - max(0.0, age)


STARTED = _process_started()


def since_start_s() -> float:
    return time.monotonic() - STARTED


class Waterfall:
    """The start-up steps of one table's follow, its topic's."""

    def __init__(self, topic: str | None = None) -> None:  # None: a test's
        self.topic = topic
        self.open = True

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the block as step name, while the start lasts."""
        began = time.monotonic()
        yield
        self.log(name, time.monotonic() - began)

    def log(self, name: str, seconds: float) -> None:
        """Step name took seconds, if the start lasts."""
        if not self.open:
            return
        ms = round(seconds * 1000)
        metrics.event("startup_step", topic=self.topic, step=name, ms=ms, at_s=_at())

    def done(self) -> None:
        """The first chunk is published: the start is over, later steps are not logged."""
        if self.open:
            self.open = False
            metrics.event("started", topic=self.topic, at_s=_at())


def _at() -> float:
    return round(since_start_s(), 2)
