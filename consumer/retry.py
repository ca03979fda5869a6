"""Exponential back-off for transient errors: 0.5 s, 1 s, 2 s ... up to a ceiling."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from schemas.errors import TransientError

log = logging.getLogger(__name__)
T = TypeVar("T")


class Backoff:
    def __init__(self, ceiling_s: float, first_s: float = 0.5) -> None:
        self.ceiling_s = ceiling_s
        self.first_s = first_s
        self.failures = 0

    def next(self) -> float:
        """The delay before the next attempt, after one more failure."""
        delay = min(self.ceiling_s, self.first_s * 2.0**self.failures)
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0


def retrying(make: Callable[[], T], backoff: Backoff, stop: threading.Event) -> T | None:
    """Call `make` until it stops raising transient errors, backing off in between;
    None when `stop` is set meanwhile."""
    while not stop.is_set():
        try:
            return make()
        except TransientError as exc:
            delay = backoff.next()
            log.warning(
                "waiting for services", extra={"error": str(exc)[:300], "retry_in_s": delay}
            )
            stop.wait(delay)
    return None
