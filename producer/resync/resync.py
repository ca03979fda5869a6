"""Resync: a new generation of one table's topic, asked for while its producer runs.

`cdfbridge-producer resync` writes a request to the table's progress topic
(producer/resync/resync_command.py).
The running producer reads its tables' requests as they come (`Resyncs`, one reader for the
process). A new request halts that table's follow alone (its open transaction is aborted)
and the follow starts over; producer/run.py takes a pending request at the start:

1. fence older producers (init_transactions), then read the progress and the request;
2. take the data topic's end offsets as the new generation's start;
3. snapshot the table at its latest version, in one transaction whose progress record
   names the generation and its start;
4. follow the Change Data Feed from the next version, as always.

The other tables never stop. A consumer then rebuilds the ClickHouse table from the
generation's start (`cdfbridge-consumer rebuild`), leaving every older row behind.
"""

from __future__ import annotations

import json
import threading

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from producer import metrics
from schemas.naming import progress_topic
from schemas.progress import RESYNC_SUFFIX
from services.kafka_errors import build
from services.progress_topic import PROGRESS_PARTITION
from services.settings import KafkaConfig

POLL_S = 0.5


class Resyncs:
    """The resync requests of this process's tables, read from their progress topics by a
    thread of its own (the only one that calls the Kafka client: its calls block each
    other). Each table has a halt event: set when the process stops (`stop`) or a resync
    newer than the table's generation is asked for. A table's follow waits on it instead
    of `stop`."""

    def __init__(self, kafka_config: KafkaConfig, stop: threading.Event) -> None:
        self.stop = stop
        self._consumer = build(
            Consumer,
            {
                **kafka_config,
                "group.id": "cdfbridge-resync-watch",  # assign() only: never joins or commits
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            },
        )
        self._lock = threading.Lock()
        self._halts: dict[str, threading.Event] = {}
        self._above: dict[str, int] = {}  # per topic: requests up to this one are taken
        self._new: list[TopicPartition] = []  # progress partitions to assign
        self._woken_by: dict[str, int] = {}  # per topic: the request that set its halt
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="resync-watch", daemon=True)
        self._thread.start()

    def halt(self, topic: str) -> threading.Event:
        """topic's halt event, one for the process's life."""
        with self._lock:
            return self._halts.setdefault(topic, threading.Event())

    def rearm(self, topic: str) -> threading.Event:
        """topic's halt event, cleared for a new follow (unless the process is stopping)."""
        halt = self.halt(topic)
        with self._lock:
            halt.clear()
            if self.stop.is_set():
                halt.set()
            return halt

    def watch(self, topic: str, taken: int) -> None:
        """Halt topic's follow on a request for a generation above `taken`: this follow has
        read the progress and takes the requests up to `taken` (a halt one of them set since
        the follow was rearmed is lifted)."""
        with self._lock:
            if topic not in self._above:  # the watcher thread assigns it: the client's calls
                self._new.append(
                    TopicPartition(progress_topic(topic), PROGRESS_PARTITION, OFFSET_BEGINNING)
                )
            self._above[topic] = max(taken, self._above.get(topic, 0))
            taken_since = self._woken_by.pop(topic, None)
            if taken_since is not None and taken_since <= taken and not self.stop.is_set():
                self._halts.setdefault(topic, threading.Event()).clear()

    def close(self) -> None:
        self._closed.set()
        self._thread.join(10)

    def _watch(self) -> None:
        try:
            while not self._closed.is_set():
                self._once()
        finally:
            self._consumer.close()

    def _once(self) -> None:
        """Pass a stop on, take the new topics, and read for POLL_S."""
        with self._lock:
            if self.stop.is_set():
                for halt in self._halts.values():
                    halt.set()
            new, self._new = self._new, []
        try:
            if new:
                self._consumer.incremental_assign(new)
                new = []
            message = self._consumer.poll(POLL_S)
        except KafkaException:
            with self._lock:
                self._new += new  # tried again next time
            return  # Kafka gone: the tables' own calls notice and say so
        key = message.key() if message is not None and message.error() is None else None
        if message is not None and key is not None and key.endswith(RESYNC_SUFFIX):
            topic = key.removesuffix(RESYNC_SUFFIX).decode()
            self._requested(topic, int(json.loads(message.value() or b"{}")["generation"]))

    def _requested(self, topic: str, generation: int) -> None:
        with self._lock:
            if generation <= self._above.get(topic, generation):
                return
            self._above[topic] = generation
            self._woken_by[topic] = generation
            halt = self._halts.setdefault(topic, threading.Event())
        halt.set()
        metrics.event("resync_requested", topic=topic, generation=generation)
