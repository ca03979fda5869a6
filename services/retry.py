"""The one retry policy: a TransientError is retried with exponential back-off, anything
else is raised at once.

Delays double from FIRST_S up to a ceiling (0.5 s, 1 s, 2 s ... max_backoff_s), or up to
the error's poll_s when it means waiting for another stage. The calls
that retry on their own are not wrapped again: librdkafka retries inside the client, the
schema registry client retries transport errors and 408/429/5xx (`max.retries`,
`retries.wait.ms`, see services/settings.py), S3A retries inside Spark.

    for attempt in retrying("Kafka", max_backoff_s=30, attempts=5):
        with attempt:
            publisher.init()

or `retrying(...)(call, *args)`. When the attempts run out, the last TransientError is
raised as it is; a stop event cuts the back-off short and raises Stopped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    stop_never,
    wait_exponential,
)

from schemas.errors import TransientError

log = logging.getLogger("cdfbridge.retry")
FIRST_S = 0.5


class Stopped(Exception):  # noqa: N818 - an outcome, not a failure
    """The stop event was set while waiting to retry."""


def backoff_s(failures: int, max_backoff_s: float) -> float:
    """The delay after `failures` consecutive failures (1, 2, ...): the schedule `retrying`
    waits by, for callers that pause instead of sleeping (the consumer's partitions)."""
    return float(min(max_backoff_s, FIRST_S * 2.0 ** (max(1, failures) - 1)))


def retrying(
    what: str,
    *,
    max_backoff_s: float,
    attempts: int | None = None,
    stop: threading.Event | None = None,
    retry_on: Callable[[BaseException], bool] | None = None,
    delay_s: Callable[[], float] | None = None,
) -> Retrying:
    """Retry TransientErrors (or what `retry_on` accepts) while waiting for `what` (named in
    the log line); `attempts` None retries until it succeeds or `stop` is set. `delay_s`
    replaces the schedule for a caller that keeps its own count of failures."""
    return Retrying(
        retry=retry_if_exception_type(TransientError)
        if retry_on is None
        else retry_if_exception(retry_on),
        wait=_backoff(max_backoff_s) if delay_s is None else lambda _: delay_s(),
        stop=stop_after_attempt(attempts) if attempts is not None else stop_never,
        sleep=_sleeper(stop),
        before_sleep=_logger(what),
        reraise=True,
    )


def _backoff(max_backoff_s: float) -> Callable[[RetryCallState], float]:
    """The exponential schedule, at most the last error's poll_s (waiting for a stage)."""
    exponential = wait_exponential(multiplier=FIRST_S, max=max_backoff_s)

    def wait(state: RetryCallState) -> float:
        failed = state.outcome.exception() if state.outcome else None
        poll = failed.poll_s if isinstance(failed, TransientError) else None
        delay = float(exponential(state))
        return delay if poll is None else min(poll, delay)

    return wait


def _sleeper(stop: threading.Event | None) -> Callable[[float], None]:
    def sleep(seconds: float) -> None:
        if stop is None:
            threading.Event().wait(seconds)
        elif stop.wait(seconds):
            raise Stopped(f"stopped while waiting {seconds:.1f} s to retry")

    return sleep


def _logger(what: str) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        delay = state.upcoming_sleep
        log.warning(
            "waiting for %s",
            what,
            extra={"error": str(error)[:300], "attempt": state.attempt_number, "retry_in_s": delay},
        )

    return before_sleep
