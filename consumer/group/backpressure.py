"""Back-pressure: after a transient failure (ClickHouse, the registry or a commit), pause
the topic's assigned partitions (the member's other topics read on), read again from where the failed work started, back off, resume.

The delays follow the project's one retry schedule (services.retry.backoff_s): 0.5 s, 1 s,
2 s ... up to `max_backoff_s`, growing while failures follow each other and starting again
once a batch is written. While paused the loop keeps polling, so rebalances are served and
the member stays in its group.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from confluent_kafka import Consumer, TopicPartition

from consumer.group.metrics import Metrics
from schemas.errors import TransientError
from services.retry import backoff_s

log = logging.getLogger(__name__)


class Backpressure:
    def __init__(
        self, consumer: Consumer, topic: str, max_backoff_s: float, metrics: Metrics
    ) -> None:
        self.consumer = consumer
        self.topic = topic
        self.max_backoff_s = max_backoff_s
        self.metrics = metrics
        self.failures = 0  # in a row
        self._until: float | None = None  # paused until then
        self._held = False  # paused while its writes catch up (`hold`)

    def back_off(self, error: TransientError, rewind: Sequence[TopicPartition]) -> float:
        """Pause the topic's assigned partitions, move them back to `rewind` (what was read after it
        was dropped), and wait the next delay of the schedule; returns it."""
        self.failures += 1
        delay = backoff_s(self.failures, self.max_backoff_s)
        self.metrics.retried()
        log.warning(
            "transient error, retrying", extra={"error": str(error)[:500], "retry_in_s": delay}
        )
        self.consumer.pause(self._assigned())
        for start in rewind:
            self.consumer.seek(start)
        self._until = time.monotonic() + delay
        return delay

    def waiting(self) -> bool:
        """True while backing off; once the delay is over, the partitions resume."""
        if self._until is None:
            return False
        if time.monotonic() < self._until:
            return True
        self._until = None
        if not self._held:
            self.consumer.resume(self._assigned())
        return False

    @property
    def still(self) -> bool:
        """Neither backing off nor held: nothing to resume."""
        return self._until is None and not self._held

    def hold(self, full: bool) -> None:
        """Paused while more batches wait for ClickHouse than may, on a member other topics
        share (the member reads on for them instead of waiting for this topic's writes);
        resumed once they fit again (and no back-off waits)."""
        if full:  # again at each step: a partition assigned meanwhile is paused too
            self.consumer.pause(self._assigned())
        elif not full and self._held and self._until is None:
            self.consumer.resume(self._assigned())
        self._held = full

    def _assigned(self) -> list[TopicPartition]:
        return [tp for tp in self.consumer.assignment() if tp.topic == self.topic]

    def recovered(self) -> None:
        """A batch was written: the next failure waits the first delay again."""
        self.failures = 0
