"""The tables of a consumer process that wait for their producer's first schemas: their
looks at the registry spaced so that, all together, they ask it at most LOOKUPS_PER_S
times a second. A table alone looks every second (NotPublishedYetError.poll_s); 200 tables
started beside their producer looked 200 times a second, and the registry, slowed by them,
took the producer 1.0 to 1.9 s a table to register its schemas against 0.28 s with no
consumer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from consumer.group.errors import NotPublishedYetError

LOOKUPS_PER_S = 20.0


class Unpublished:
    """How many tables of the process wait for their first schemas."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """One table waiting while the block runs."""
        with self._lock:
            self.count += 1
        try:
            yield
        finally:
            with self._lock:
                self.count -= 1

    def poll_s(self) -> float:
        """The time between one table's looks: a second, or longer when more than
        LOOKUPS_PER_S tables wait."""
        return max(NotPublishedYetError.poll_s, self.count / LOOKUPS_PER_S)


UNPUBLISHED = Unpublished()  # the process's
