"""The start-up waterfall: each step of a start, until the first chunk is published, logged
as a `startup_step` event with its duration (`ms`) and when it ended (`at_s`, seconds since
the process started), so a slow start shows where its time went:

    {"event": "startup_step", "step": "spark_session", "ms": 5210, "at_s": 5.61, ...}

Kafka's side of a start (the topics, the transactional producer fenced in, the progress
read: `kafka_side`) runs in a thread beside Spark's (the session, the Delta log), so the
steps' durations add up to more than the last `at_s`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from producer import metrics
from producer.publish import Publisher, Transactions
from producer.topics import DataTopic, ensure_topics
from schemas.progress import Position

if TYPE_CHECKING:
    from producer.settings import ProducerSettings


def _process_started() -> float:
    """time.monotonic() when this process started (Linux's /proc), else now."""
    now = time.monotonic()
    try:
        # Field 22 of /proc/self/stat, the start in clock ticks since boot; the command
        # name (field 2, in parentheses) may hold spaces, so count from its end.
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - max(0.0, age)


STARTED = _process_started()


def since_start_s() -> float:
    return time.monotonic() - STARTED


class Waterfall:
    """The start-up steps of one table's follow, its topic's."""

    def __init__(self, topic: str | None = None) -> None:  # None: a test's
        self.topic = topic
        self.open = True

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the block as step name, while the start lasts."""
        began = time.monotonic()
        yield
        self.log(name, time.monotonic() - began)

    def log(self, name: str, seconds: float) -> None:
        """Step name took seconds, if the start lasts."""
        if not self.open:
            return
        ms = round(seconds * 1000)
        metrics.event("startup_step", topic=self.topic, step=name, ms=ms, at_s=_at())

    def done(self) -> None:
        """The first chunk is published: the start is over, later steps are not logged."""
        if self.open:
            self.open = False
            metrics.event("started", topic=self.topic, at_s=_at())


def _at() -> float:
    return round(since_start_s(), 2)


@dataclass(frozen=True)
class KafkaSide:
    """A table's topics made, its progress read and, unless the progress names a table
    elsewhere, its transactional producer fenced in (`fenced`)."""

    publisher: Publisher
    position: Position
    topic: DataTopic
    fenced: bool = True


def kafka_side(
    settings: ProducerSettings, steps: Waterfall, transactions: Transactions | None = None
) -> KafkaSide:
    """The topics created when missing, the progress read, then the transactional producers
    started (transactions: the process's, else the table's own): older ones and the table's
    recorded owner fenced, the progress read again. A progress naming a table at another
    place is left unfenced: it may be another table's topic, which only the table's Delta id
    tells (producer/start.py check_identity)."""
    config, kafka = settings.source, settings.kafka.client_config()
    limit = settings.kafka.max_message_bytes
    with steps.step("topics"):
        topic = ensure_topics(
            kafka, config.topic_name, config.partitions, limit, config.created_topic_config
        )
    publisher = Publisher(kafka, config.topic_name, config.tombstones, limit, transactions)
    try:
        with steps.step("progress"):
            claimed = publisher.progress.read()
        if claimed.identity is not None and claimed.identity.table != config.table:
            return KafkaSide(publisher, claimed, topic, fenced=False)
        with steps.step("kafka_transactions"):  # fence older producers, read the progress
            position = publisher.start()
    except BaseException:
        publisher.close()
        raise
    return KafkaSide(publisher, position, topic)


def kafka_side_in_thread(
    settings: ProducerSettings, steps: Waterfall, transactions: Transactions | None = None
) -> Future[KafkaSide]:
    """kafka_side(...), set up in a thread of its own while this one goes on."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="kafka-setup")
    try:
        return pool.submit(kafka_side, settings, steps, transactions)
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task


def discard(kafka: Future[KafkaSide]) -> None:
    """Close the publisher a Kafka side set up in vain, once it is set up."""

    def close(done: Future[KafkaSide]) -> None:
        if not done.cancelled() and done.exception() is None:
            done.result().publisher.close()

    kafka.add_done_callback(close)
