"""`rebuild = "auto"`'s look-out for topics whose generation is newer than their tables'.

One thread for the process, whatever the number of topics, every CHECK_S:
- one Kafka consumer, assigned every watched topic's progress topic (read_committed), reads
  each on from where it got and keeps the generation its producer's last record names;
- one ClickHouse client asks the marks of all the watched tables (consumer/tables/
  generation.py) in one query.

A pipeline whose topic is ahead of its table is stopped and its `Watched.moved` set: its
serve() (consumer/rebuild/auto_rebuild.py) then rebuilds the table. A topic whose progress
topic is not there yet (no producer has published) is looked for again each round. An error
of either service is logged and the next round tries again: the pipelines meet the same
services and report them.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from clickhouse_connect.driver.client import Client
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from consumer.settings import ConsumerSettings
from schemas.errors import CdfBridgeError
from schemas.naming import progress_topic
from schemas.progress import decode, record_key
from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from services.progress_topic import PROGRESS_PARTITION, reader_config
from services.table_marks import held_by

log = logging.getLogger(__name__)
CHECK_S = 10.0
TIMEOUT_S = 10.0  # per Kafka metadata request
READ_S = 0.2  # a consume() call that brings nothing ends a round's read ...
READ_BUDGET_S = 2.0  # ... and so does this much time: busy topics never run dry


class Stoppable(Protocol):
    """What is watched of a pipeline (consumer/group/loop.py): its topic's settings, its stop."""

    settings: ConsumerSettings

    def stop(self) -> None: ...


@dataclass
class Watched:
    pipeline: Stoppable
    moved: bool = False  # stopped for a new generation


class Generations:
    """Watches the pipelines handed to `watch` until they are `forget`-ed or moved."""

    def __init__(self, settings: ConsumerSettings) -> None:
        self.settings = settings  # the process's: its [kafka] and [clickhouse] are every topic's
        self._watched: dict[str, Watched] = {}  # by topic
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Consumer | None = None
        self._client: Client | None = None
        self._assigned: set[str] = set()  # progress topics read on
        self._generation: dict[str, int] = {}  # by topic: its producer's last record's

    def watch(self, pipeline: Stoppable) -> Watched:
        watched = Watched(pipeline)
        with self._lock:
            self._watched[pipeline.settings.consumer.topic] = watched
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="generations")
                self._thread.start()
        return watched

    def forget(self, watched: Watched) -> None:
        """Once this returns, `watched.moved` no longer changes."""
        with self._lock:
            topic = watched.pipeline.settings.consumer.topic
            if self._watched.get(topic) is watched:
                del self._watched[topic]

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        try:
            while not self._done.wait(CHECK_S):
                try:
                    self._check()
                except (CdfBridgeError, KafkaException) as exc:
                    log.warning("cannot compare generations", extra={"error": str(exc)[:300]})
                except Exception as exc:  # noqa: BLE001 - logged; the pipelines go on
                    log.error("comparing generations failed", exc_info=exc)
        finally:
            if self._consumer is not None:
                self._consumer.close()

    def _check(self) -> None:
        with self._lock:
            topics = {t: w.pipeline.settings.target() for t, w in self._watched.items()}
        if not topics:
            return
        self._read(list(topics))
        with sorted_errors(self.settings.clickhouse.url):
            if self._client is None:
                self._client = connect(self.settings.clickhouse)
            holds = held_by(self._client, list(topics.values()))
        for topic, target in topics.items():
            if self._generation.get(topic, 0) > holds[target]:
                self._moved(topic)

    def _moved(self, topic: str) -> None:
        with self._lock:
            watched = self._watched.pop(topic, None)
        if watched is not None:
            watched.moved = True
            watched.pipeline.stop()

    def _read(self, topics: list[str]) -> None:
        """Every topic's progress read on, until it runs dry or READ_BUDGET_S; the next round
        goes on from there."""
        if self._consumer is None:
            self._consumer = Consumer(
                {
                    **reader_config(self.settings.kafka.client_config()),
                    # A progress topic made again under its name is read from its start.
                    "auto.offset.reset": "earliest",
                }
            )
        unassigned = [t for t in topics if progress_topic(t) not in self._assigned]
        if unassigned:
            self._assign(unassigned)
        keys = {record_key(t): t for t in topics}
        deadline = time.monotonic() + READ_BUDGET_S
        while time.monotonic() < deadline and (
            messages := self._consumer.consume(1000, timeout=READ_S)
        ):
            for message in messages:
                topic, value = keys.get(message.key() or b""), message.value()
                if message.error() is None and topic is not None and value is not None:
                    self._generation[topic] = decode(value).generation.number

    def _assign(self, topics: list[str]) -> None:
        """Read from their beginning the progress topics of `topics` that exist now."""
        assert self._consumer is not None  # noqa: S101 - made by _read
        found = self._consumer.list_topics(timeout=TIMEOUT_S).topics
        there = [progress_topic(t) for t in topics if progress_topic(t) in found]
        if there:
            self._consumer.incremental_assign(
                [TopicPartition(name, PROGRESS_PARTITION, OFFSET_BEGINNING) for name in there]
            )
            self._assigned.update(there)
