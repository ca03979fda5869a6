"""Waiting for more work to arrive before serving it together: the cycle's reads
(producer/read/cycle.py) and the transactions' chunks (producer/publish/transactor.py)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable


def gather(
    changed: threading.Condition,
    count: Callable[[], int],
    enough: Callable[[], bool],
    quiet_s: float,
    most_s: float,
) -> None:
    """Wait, holding changed's lock, until enough(), or none came for quiet_s (count() did
    not grow), or most_s passed."""
    began = time.monotonic()
    while not enough():
        seen, left = count(), began + most_s - time.monotonic()
        if left <= 0:
            return
        changed.wait_for(functools.partial(_grew, count, seen), min(quiet_s, left))
        if count() == seen:
            return  # quiet: none came


def _grew(count: Callable[[], int], seen: int) -> bool:
    return count() > seen
