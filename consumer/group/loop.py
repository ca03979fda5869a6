"""One topic's share of the group member's loop: batch what the member read of it per
partition, let the commit path move on (write to ClickHouse, then commit), repeat.

    consumer/group/startup.py      the table and the dead-letter topic, before joining
    consumer/group/member.py       the process's one member, polling for every topic
    consumer/group/rebalance.py    partitions assigned, revoked, lost
    consumer/group/uncommitted.py  everything read and not yet committed, and every way out
    consumer/group/commit.py       the numbered steps: record the unit, insert, commit
    consumer/group/backpressure.py pause, back off, resume after a transient failure

One `Pipeline` per topic: consumer/process.py runs one for each topic the process reads, all
on the process's member, and stops them on SIGTERM and SIGINT; each then drains its
buffered batches, commits them and returns. A pipeline made without a member (a rebuild's,
a test's) runs on a member of its own, on the calling thread: one topic is a process of one.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Executor
from functools import partial

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from consumer.group import kafka
from consumer.group.backpressure import Backpressure
from consumer.group.batch import Batcher, Limits, PartitionBatch, TopicPartitionKey, Written
from consumer.group.commit import CommitQueue
from consumer.group.dlq import DeadLetters
from consumer.group.member import Member
from consumer.group.metrics import Metrics
from consumer.group.rebalance import Rebalance
from consumer.group.startup import dead_letters_for, open_writer, partitions_of, prefetch_of
from consumer.group.uncommitted import Uncommitted
from consumer.group.writer import BatchWriter
from consumer.settings import ConsumerSettings

log = logging.getLogger(__name__)
# A pipeline on the process's member, run on the main thread, wakes this often for signals;
# on any other thread it sleeps until it is done (100 idle topics woke 200 times a second).
WAIT_S = 0.5


class Pipeline:
    """One topic read by a group member, from start-up to its drain."""

    def __init__(
        self,
        settings: ConsumerSettings,
        *,
        until_caught_up: bool = False,
        metrics: Metrics | None = None,
        dead_letters: DeadLetters | None = None,
        member: Member | None = None,
        writes: Executor | None = None,
    ) -> None:
        """settings: one topic's (ConsumerSettings.for_topic); metrics, dead_letters, member
        and the pool its writes run on: the process's (consumer/process.py), else its own."""
        self.settings = settings
        self.topic = settings.consumer.topic
        self.until_caught_up = until_caught_up
        self.metrics = metrics or Metrics(self.topic)
        self.dead_letters = dead_letters
        self.member, self.writes = member, writes
        self.rebalance = Rebalance()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._done = threading.Event()
        self._writer: BatchWriter | None = None
        self._owner: Uncommitted | None = None
        self._backpressure: Backpressure | None = None
        self._partitions: frozenset[TopicPartitionKey] = frozenset()
        self._caught_up = False
        self._touched = False  # read something, or an event, since the last `after`
        self._began = self._first_message = 0.0

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopping(self) -> threading.Event:
        return self._stop

    def run(self) -> None:
        """Consume until stopped (or caught up), then drain and commit what is buffered;
        raises the error the topic stopped on."""
        try:
            self._run()
        finally:
            self.metrics.finished = True

    def _run(self) -> None:
        dead_letters = self.dead_letters or dead_letters_for(self.settings)
        self._writer = open_writer(self.settings, dead_letters, self._stop)
        if self._writer is None:
            return
        self._began = time.monotonic()
        if self.member is None:
            member = Member(self.settings, prefetch_of([self.settings]), alone=True)
            member.add(self)
            member.run()
        else:
            self.member.add(self)
            main = threading.current_thread() is threading.main_thread()
            while not self._done.wait(WAIT_S if main else None):
                pass
        if self.error is not None:
            raise self.error

    # What the member calls, on its thread.
    def attach(self, consumer: Consumer) -> None:
        """Joining the member: the commit path, on the member's consumer."""
        c = self.settings.consumer
        assert self._writer is not None  # noqa: S101 - run() made it before adding
        commit, written = partial(kafka.commit, consumer), partial(self._written, consumer)
        batcher = Batcher(Limits(c.batch_rows, c.batch_bytes, c.batch_seconds))
        queue = CommitQueue(self._writer.write, commit, written, self.writes)
        self._owner = self.rebalance.owner = Uncommitted(batcher, queue)
        self._backpressure = Backpressure(consumer, self.topic, c.max_backoff_seconds, self.metrics)
        if self.until_caught_up:
            self._partitions = partitions_of(consumer, self.topic)

    @property
    def busy(self) -> bool:
        return self._owner is not None and self._owner.busy

    @property
    def finishing(self) -> bool:
        return self._stop.is_set() or self._caught_up or self.error is not None

    def submit(self, messages: list[Message]) -> None:
        if not self._first_message:
            self._first_message = time.monotonic()
        assert self._owner is not None  # noqa: S101 - attached
        self._touched = True
        self._owner.submit(messages)

    def event(self, event: Message) -> None:
        """A partition's end, or a Kafka error that is not fatal."""
        error, partition = event.error(), event.partition()
        assert self._owner is not None  # noqa: S101 - attached
        self._touched = True
        if error is not None and error.code() == KafkaError._PARTITION_EOF:
            self._owner.ended((self.topic, partition or 0))  # an end event names its partition
        elif error is not None:
            log.warning("kafka error", extra={"topic": self.topic, "error": str(error)})

    def after(self, shared: bool = False) -> bool:
        """Once per poll of the member: cut batches due, move the commit path on; paused,
        not waited for, when its writes fall behind on a member other topics share. True
        when quiet: nothing to cut, write, commit or resume until a message of it comes."""
        owner, backpressure = self._owner, self._backpressure
        assert owner is not None and backpressure is not None  # noqa: S101 - attached
        self.metrics.polled()
        if self.error is not None:  # leaving at this step: nothing more is written
            return False
        if not self._touched and owner.settled and backpressure.still:
            return not self.finishing  # idle (hundreds of topics)
        self._touched = False
        waiting = backpressure.waiting()
        # While paused, consume() still serves rebalances and may return a few messages of
        # partitions assigned meanwhile: they are buffered like any other.
        owner.cut_due()
        if not waiting:
            outcome = owner.poll(wait=not shared)
            if outcome.failed is not None:
                backpressure.back_off(outcome.failed, outcome.rewind)
            elif outcome.written:
                backpressure.recovered()
        # Resumed too once the member reads this topic alone again.
        backpressure.hold(shared and owner.full)
        self.metrics.buffered(owner.buffered_rows())
        self._caught_up = self.until_caught_up and owner.caught_up(self._partitions)
        return False

    def fail(self, error: BaseException) -> None:
        """The topic stops on `error` (the first one) at the member's next step."""
        if self.error is None:
            self.error = error

    def finish(self) -> None:
        """Leaving: drain (or, after an error, abandon) what was read. Never raises."""
        owner, c = self._owner, self.settings.consumer
        assert owner is not None  # noqa: S101 - attached
        try:
            if self.error is not None:
                owner.abandon()
                return
            deadline = time.monotonic() + 2 * c.max_backoff_seconds
            if not owner.drain(deadline, c.max_backoff_seconds):
                log.warning(
                    "stopping with uncommitted batches; they will be consumed again",
                    extra={"topic": self.topic},
                )
            self.metrics.summary(self._caught_up, self._began, self._first_message)
        except Exception as exc:  # noqa: BLE001 - the topic's run raises it
            self.fail(exc)
            owner.abandon()

    def close(self) -> None:
        """Left the member: nothing of it is read any more."""
        if self._owner is not None:
            self._owner.close()
        self._done.set()

    def abandon(self, error: BaseException) -> None:
        """Stopped by `error` before it could leave in order (or join at all)."""
        self.fail(error)
        if self._owner is not None:
            self._owner.abandon()
        self.close()

    def _written(
        self, consumer: Consumer, batch: PartitionBatch, written: Written, seconds: float
    ) -> None:
        where = TopicPartition(batch.topic, batch.partition)
        _, high = consumer.get_watermark_offsets(where, cached=True)
        self.metrics.written(batch, written, seconds, high)
