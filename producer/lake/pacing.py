"""The pace of a lake's tables (producer/lake/lake.py): turns to start, and a failed table's
back-off before its next attempt."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from services.retry import backoff_s

TABLE_MAX_BACKOFF_S = 300.0
HEALTHY_S = 60.0  # an attempt that ran this long before failing had recovered


def starting_at_once(heap_bytes: int, chunk_bytes: int) -> int:
    """How many tables set up at once: as many as half the driver's heap holds a chunk each.

    From its Delta log's load until its first read is collected, a start holds its
    snapshot and then its first chunk (up to chunk_bytes encoded, max_bytes_per_chunk) in
    the driver's heap; the other half is Spark's own, for the cycle's job. At least one
    table starts: a 1 GiB driver with 128 MiB chunks starts 4 at once, a 4 GiB one 16."""
    return max(1, round(heap_bytes / (2 * chunk_bytes)))


class Starts:
    """The turns of tables to set up, `size` at a time, taken in the order of the tickets
    asked for (`ticket`): the lake's tables in their order, which is also the order in
    which their Kafka sides are set up (producer/lake/startup.py), not in the order their
    threads happen to be scheduled. A ticket holds its place from the moment it is asked
    for, so a later one waits even for a table whose thread has not asked for its turn
    yet; it leaves its place when its table stops waiting."""

    def __init__(self, size: int) -> None:
        self._size, self._taken = size, 0
        self._waiting: list[int] = []  # the tickets given and not served yet, a heap
        self._tickets = itertools.count()
        self._changed = threading.Condition()

    def ticket(self) -> int:
        """A place in the order of turns, after every ticket asked for before."""
        with self._changed:
            ticket = next(self._tickets)
            heapq.heappush(self._waiting, ticket)
            return ticket

    @contextmanager
    def turn(
        self, stop: threading.Event, ticket: int | None = None
    ) -> Iterator[Callable[[], None] | None]:
        """A turn, once every earlier ticket waiting has had one, as the callable that gives
        it back (once, or on leaving); None when stop is set before one comes. ticket: a
        new one, after every other, when not given."""
        if not self._wait(stop, self.ticket() if ticket is None else ticket):
            yield None
            return
        given = threading.Event()

        def give_back() -> None:
            if not given.is_set():
                given.set()
                with self._changed:
                    self._taken -= 1
                    self._changed.notify_all()

        try:
            yield give_back
        finally:
            give_back()

    def _wait(self, stop: threading.Event, ticket: int) -> bool:
        """Whether the turn was taken (else the process stops)."""
        with self._changed:
            while self._taken >= self._size or self._waiting[0] != ticket:
                if stop.is_set():
                    self._waiting.remove(ticket)
                    heapq.heapify(self._waiting)
                    self._changed.notify_all()
                    return False
                self._changed.wait(0.2)
            heapq.heappop(self._waiting)
            self._taken += 1
            self._changed.notify_all()  # the next ticket may take a turn left
            return True


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
