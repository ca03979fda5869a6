"""The process's one member of the consumer group: one consumer subscribed to every topic
the process reads, polled on one thread, which hands each topic's messages, partition
events and rebalances to that topic's `Pipeline` (consumer/group/loop.py).

A topic joins once its table can be written, and leaves when it stops, is caught up or
fails. Joining or leaving changes the subscription, and cooperative-sticky assignment
(consumer/group/kafka.py) moves only that topic's partitions. A topic leaves in this order:

1. it drains (or, on an error, abandons) what it read, so nothing more of it is written;
2. it is taken out of the subscription; its partitions are revoked at a later poll, where
   nobody is called for them, and what was fetched of them meanwhile is dropped unread
   (uncommitted, so read again by their next owner);
3. the same topic joins again (after a rebuild) only once none of its partitions is still
   assigned here, so it starts at the group's committed offsets.

Only this thread calls the consumer, apart from the commits of topics draining together.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from confluent_kafka import Consumer, Message

from consumer.group.errors import KafkaFatalError
from consumer.group.routes import Routes, by_topic
from consumer.group.startup import leave, member_consumer
from consumer.group.topic import Topic
from consumer.settings import ConsumerSettings
from services.kafka_errors import describe

log = logging.getLogger(__name__)
FETCH = 10_000  # messages per consume() call
# consume() waits this long for FETCH messages, so a trickle is still batched promptly; less
# while a write is under way, so the next starts soon after. While every topic is quiet,
# poll() waits up to IDLE_POLL_S for the first message (ten steps a second: 1.1% of a core).
POLL_S, BUSY_POLL_S, IDLE_POLL_S = 0.1, 0.005, 1.0
DRAINING_AT_ONCE = 8  # topics leaving together drain side by side
# Topics ready within JOIN_QUIET_S of each other join in one rebalance (waiting JOIN_GATHER_S
# at most): 100 topics starting took 3 rebalances instead of 23 to 30.
JOIN_QUIET_S, JOIN_GATHER_S = 0.5, 3.0


class Member:
    """Made by the process (consumer/process.py) for all its topics, or by a `Pipeline` run
    alone, for its one topic (`alone`: it ends when its topic leaves)."""

    def __init__(self, settings: ConsumerSettings, prefetch_kb: int, *, alone: bool = False):
        self.settings, self.prefetch_kb, self.alone = settings, prefetch_kb, alone
        self.consumer: Consumer | None = None
        self.topics: dict[str, Topic] = {}  # subscribed
        self._routes = Routes(self.topics)
        self._arriving: list[Topic] = []
        self._quiet = False  # every topic had nothing to do at the last step
        self._gathering = (0.0, 0.0)  # when the first and the last of _arriving came
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._dead: BaseException | None = None

    def add(self, pipeline: Topic) -> None:
        """A topic ready to be read (its writer made); joins at the loop's next step."""
        with self._lock:
            dead = self._dead
            if dead is None:
                now = time.monotonic()
                self._gathering = (self._gathering[0] if self._arriving else now, now)
                self._arriving.append(pipeline)
        if dead is not None:
            pipeline.abandon(dead)

    def close(self) -> None:
        """No topic comes any more: the loop ends once the last one has left."""
        self._closed.set()

    def run(self) -> None:
        """The loop, until closed (or, alone, its topic has left). An error of the member
        itself (a fatal Kafka error) stops every topic with it."""
        try:
            while not self._over():
                self._step()
        except BaseException as exc:  # noqa: BLE001 - each topic's run raises it
            with self._lock:
                self._dead, every = exc, [*self.topics.values(), *self._arriving]
                self.topics.clear()
                self._arriving = []
            for pipeline in every:
                pipeline.abandon(exc)
        finally:
            if self.consumer is not None:
                leave(self.consumer, self._routes.joined.is_set, threading.Event())

    def _over(self) -> bool:
        with self._lock:
            empty = not self.topics and not self._arriving
        return empty and (self.alone or self._closed.is_set())

    def _step(self) -> None:
        self._admit()
        if not self.topics:
            if self.consumer is not None:
                self.consumer.poll(POLL_S)  # serves revocations; a message is dropped
            else:
                time.sleep(POLL_S)
            return
        consumer = self.consumer
        assert consumer is not None  # noqa: S101 - made when the first topic joined
        messages = self._read(consumer)
        events: list[Message] = []
        if any(map(Message.error, messages)):
            events = [m for m in messages if m.error() is not None]
            messages = [m for m in messages if m.error() is None]
        for topic, chunk in by_topic(messages).items():
            self._each(topic, partial(_submit, chunk))
        for event in events:
            self._event(event)
        shared = len(self.topics) > 1
        quiet = [self._each(p.topic, partial(_after, shared)) for p in list(self.topics.values())]
        self._quiet = all(quiet) and not messages and not events
        self._leave([p for p in self.topics.values() if p.finishing])

    def _read(self, consumer: Consumer) -> list[Message]:
        """What the next step handles: at most FETCH messages and events, in order."""
        if any(p.busy for p in self.topics.values()):
            return consumer.consume(FETCH, timeout=BUSY_POLL_S)
        if not self._quiet or self._arriving:
            return consumer.consume(FETCH, timeout=POLL_S)
        first = consumer.poll(IDLE_POLL_S)  # returns at the first message, unlike consume()
        return [] if first is None else [first, *consumer.consume(FETCH - 1, timeout=POLL_S)]

    def _each(self, topic: str, call: Callable[[Topic], bool | None]) -> bool | None:
        """`call` on the topic's pipeline; an error stops that topic alone."""
        pipeline = self.topics.get(topic)
        if pipeline is None:
            return None  # left already: read again by the partition's next owner
        try:
            return call(pipeline)
        except Exception as exc:  # noqa: BLE001 - the topic's run raises it
            pipeline.fail(exc)
            return None

    def _event(self, event: Message) -> None:
        error = event.error()
        if error is not None and error.fatal():
            raise KafkaFatalError(describe(error))
        topic = event.topic()
        if topic:
            self._each(topic, lambda p: p.event(event))
        elif error is not None:
            log.warning("kafka error", extra={"error": str(error)})

    def _admit(self) -> None:
        """Topics added join together once no other came for JOIN_QUIET_S (or after
        JOIN_GATHER_S), unless a partition of theirs is still assigned here."""
        with self._lock:
            first, last = self._gathering
            now = time.monotonic()
            if not self.alone and now - last < JOIN_QUIET_S and now - first < JOIN_GATHER_S:
                return
            arriving, self._arriving = self._arriving, []
        if not arriving:
            return
        held = {tp.topic for tp in self.consumer.assignment()} if self.consumer else set()
        ready = [p for p in arriving if p.topic not in held]
        with self._lock:
            self._arriving[:0] = [p for p in arriving if p.topic in held]
        if not ready:
            return
        if self.consumer is None:
            self.consumer = member_consumer(self.settings, self.prefetch_kb)
        for pipeline in ready:
            try:
                pipeline.attach(self.consumer)
            except Exception as exc:  # noqa: BLE001 - the topic's run raises it
                pipeline.abandon(exc)
            else:
                self.topics[pipeline.topic] = pipeline
        self._subscribe()

    def _leave(self, leaving: list[Topic]) -> None:
        """The numbered steps of the module's docstring, for topics leaving together."""
        if not leaving:
            return
        for pipeline in leaving:
            pipeline.rebalance.closing = True
        if len(leaving) == 1:  # 1.
            leaving[0].finish()
        else:
            with ThreadPoolExecutor(min(DRAINING_AT_ONCE, len(leaving))) as pool:
                list(pool.map(lambda p: p.finish(), leaving))
        for pipeline in leaving:  # 2.
            del self.topics[pipeline.topic]
        self._subscribe()
        for pipeline in leaving:
            pipeline.close()

    def _subscribe(self) -> None:
        assert self.consumer is not None  # noqa: S101 - a topic joined before
        self._quiet = False  # a rebalance follows
        if not self.topics:
            self.consumer.unsubscribe()
            return
        self.consumer.subscribe(
            sorted(self.topics),
            on_assign=self._routes.on_assign,
            on_revoke=self._routes.on_revoke,
            on_lost=self._routes.on_lost,
        )


def _after(shared: bool, pipeline: Topic) -> bool:
    return pipeline.after(shared)


def _submit(messages: list[Message], pipeline: Topic) -> None:
    pipeline.submit(messages)
