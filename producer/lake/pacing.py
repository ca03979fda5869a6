"""The pace of a lake's tables (producer/lake/lake.py): turns to start, and a failed table's
back-off before its next attempt."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from services.retry import backoff_s

TABLE_MAX_BACKOFF_S = 300.0
HEALTHY_S = 60.0  # an attempt that ran this long before failing had recovered
STARTING_AT_ONCE = 4  # tables setting up at once: each keeps Spark's driver busy meanwhile


class Starts:
    """The turns of tables to set up, `size` at a time."""

    def __init__(self, size: int = STARTING_AT_ONCE) -> None:
        self._turns = threading.BoundedSemaphore(size)

    @contextmanager
    def turn(self, stop: threading.Event) -> Iterator[Callable[[], None] | None]:
        """A turn, as the callable that gives it back (once, or on leaving); None when stop
        is set before one comes."""
        while not self._turns.acquire(timeout=0.2):
            if stop.is_set():
                yield None
                return
        given = threading.Event()

        def give_back() -> None:
            if not given.is_set():
                given.set()
                self._turns.release()

        try:
            yield give_back
        finally:
            give_back()


class Backoff:
    """One table's consecutive failures, and the delay before its next attempt: an attempt
    that ran HEALTHY_S counts as a recovery, so its failure waits FIRST_S again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.failures = 0
        self.began = clock()

    def attempt(self) -> None:
        self.began = self.clock()

    def failed(self) -> None:
        recovered = self.clock() - self.began >= HEALTHY_S
        self.failures = 1 if recovered else self.failures + 1

    def delay_s(self) -> float:
        return backoff_s(self.failures, TABLE_MAX_BACKOFF_S)
