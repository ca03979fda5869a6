"""The consumer group member's poll loop: consume a chunk, batch it per partition, let the
commit path move on (write to ClickHouse, then commit), repeat.

    consumer/group/startup.py      join the group; set up the table and the dead-letter topic
    consumer/group/rebalance.py    partitions assigned, revoked, lost
    consumer/group/uncommitted.py  everything read and not yet committed, and every way out
    consumer/group/commit.py       the numbered steps: record the batch end, insert, commit
    consumer/group/backpressure.py pause, back off, resume after a transient failure

One `Pipeline` per topic: consumer/process.py runs one for each topic the process reads,
and stops them on SIGTERM and SIGINT; each then drains its buffered batches, commits them
and returns.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from consumer.group import kafka
from consumer.group.backpressure import Backpressure
from consumer.group.batch import Batcher, Limits, PartitionBatch, Written
from consumer.group.commit import CommitQueue, Write
from consumer.group.dlq import DeadLetters
from consumer.group.errors import KafkaFatalError
from consumer.group.metrics import DEAD_LETTERS, ROWS, Metrics
from consumer.group.rebalance import Rebalance
from consumer.group.startup import start
from consumer.group.uncommitted import Uncommitted
from consumer.settings import ConsumerSettings
from services.kafka_errors import describe

log = logging.getLogger(__name__)
FETCH = 10_000  # messages per consume() call
# consume() waits this long for FETCH messages, so a trickle is still batched promptly;
# shorter while a write is under way, so that the next one starts soon after it.
POLL_S = 0.1
BUSY_POLL_S = 0.005


class Pipeline:
    """One member of the consumer group, from start-up to its drain."""

    def __init__(
        self,
        settings: ConsumerSettings,
        *,
        until_caught_up: bool = False,
        metrics: Metrics | None = None,
        dead_letters: DeadLetters | None = None,
    ) -> None:
        """settings: one topic's (ConsumerSettings.for_topic); metrics and dead_letters: the
        process's (consumer/process.py), else its own."""
        self.settings = settings
        self.until_caught_up = until_caught_up
        self.metrics = metrics or Metrics(settings.consumer.topic)
        self.dead_letters = dead_letters
        self.rebalance = Rebalance()
        self._stop = threading.Event()
        self._first_message: float | None = None

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> threading.Event:
        return self._stop

    def run(self) -> None:
        """Consume until stopped (or caught up), then drain and commit what is buffered."""
        try:
            self._run()
        finally:
            self.metrics.finished = True

    def _run(self) -> None:
        c = self.settings.consumer
        started = start(
            self.settings, self.rebalance, self._stop, self.until_caught_up, self.dead_letters
        )
        if started is None:
            return
        consumer, partitions = started.consumer, started.partitions
        owner = self.rebalance.owner = self._owner(consumer, started.writer.write)
        backpressure = Backpressure(consumer, c.max_backoff_seconds, self.metrics)
        began = time.monotonic()
        try:
            caught_up = False
            while not self._stop.is_set() and not caught_up:
                self._step(consumer, owner, backpressure)
                caught_up = self.until_caught_up and owner.caught_up(partitions)
            deadline = time.monotonic() + 2 * c.max_backoff_seconds
            if not owner.drain(deadline, c.max_backoff_seconds):
                log.warning(
                    "stopping with uncommitted batches; they will be consumed again",
                    extra={"topic": c.topic},
                )
            self._summary(began, caught_up)
        except BaseException:
            owner.abandon()
            raise
        finally:
            self.rebalance.closing = True
            consumer.close()  # its revoke writes nothing more after drain or abandon
            owner.close()

    def _owner(self, consumer: Consumer, write: Write) -> Uncommitted:
        c = self.settings.consumer
        commit, written = partial(kafka.commit, consumer), partial(self._written, consumer)
        batcher = Batcher(Limits(c.batch_rows, c.batch_bytes, c.batch_seconds))
        return Uncommitted(batcher, CommitQueue(write, commit, written))

    def _step(self, consumer: Consumer, owner: Uncommitted, backpressure: Backpressure) -> None:
        waiting = backpressure.waiting()
        # While paused, consume() still serves rebalances and may return a few messages of
        # partitions assigned meanwhile: they are buffered like any other.
        messages = consumer.consume(FETCH, timeout=BUSY_POLL_S if owner.busy else POLL_S)
        self.metrics.polled()
        if messages and self._first_message is None:
            self._first_message = time.monotonic()
        events: list[Message] = []
        if any(map(Message.error, messages)):
            events = [m for m in messages if m.error() is not None]
            messages = [m for m in messages if m.error() is None]
        owner.submit(messages)
        for event in events:
            self._event(event, owner)
        owner.cut_due()
        if not waiting:
            outcome = owner.poll()
            if outcome.failed is not None:
                backpressure.back_off(outcome.failed, outcome.rewind)
            elif outcome.written:
                backpressure.recovered()
        self.metrics.buffered(owner.buffered_rows())

    def _event(self, event: Message, owner: Uncommitted) -> None:
        error, topic, partition = event.error(), event.topic(), event.partition()
        if error is None:
            return
        if error.code() == KafkaError._PARTITION_EOF:
            owner.ended((str(topic), partition or 0))  # an end event names its partition
        elif error.fatal():
            raise KafkaFatalError(describe(error))
        else:
            log.warning("kafka error", extra={"error": str(error)})

    def _written(
        self, consumer: Consumer, batch: PartitionBatch, written: Written, seconds: float
    ) -> None:
        where = TopicPartition(batch.topic, batch.partition)
        _, high = consumer.get_watermark_offsets(where, cached=True)
        self.metrics.written(batch, written, seconds, high)

    def _summary(self, began: float, caught_up: bool) -> None:
        now = time.monotonic()
        reading = now - self._first_message if self._first_message is not None else 0.0
        log.info(
            "caught up" if caught_up else "stopped",
            extra={
                "topic": self.settings.consumer.topic,
                "rows": self.metrics.total(ROWS),
                "dead_letters": self.metrics.total(DEAD_LETTERS),
                "seconds": round(now - began, 3),
                "seconds_from_first_message": round(reading, 3),
            },
        )
