"""Exponential back-off for transient errors: 0.5 s, 1 s, 2 s ... up to a ceiling."""

from __future__ import annotations


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
