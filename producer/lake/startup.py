"""Kafka's side of a table's start: its topics made, its progress read and its
transactional producers fenced in (`kafka_side`), in a thread beside Spark's side (the
session, the Delta log); each step logged in the start's waterfall (producer/steps.py).

A process's start sets up every table's Kafka side at once (`kafka_sides`), while Spark
starts: their topics described in one request, their progress read by one reader, and
their claims committed in one transaction (producer/publish/takeover_together.py). A table
that this leaves out (None) sets up its own with `kafka_side`, as it does after a failure.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from producer.errors import fails_every_table
from producer.publish.publish import Publisher, Transactions
from producer.publish.takeover_together import take_over_together
from producer.publish.topics import DataTopic, Wanted, ensure_all, ensure_topics
from producer.steps import Waterfall
from schemas.progress import Position
from services.progress_reads import read_together
from services.progress_topic import Reading
from services.registry_client import registry_client

if TYPE_CHECKING:
    from producer.settings import ProducerSettings, SourceSection

log = logging.getLogger("cdfbridge.producer")
FIRST_GROUP = 8  # tables whose Kafka sides a start sets up first; each next group doubles


@dataclass(frozen=True)
class KafkaSide:
    """A table's topics made, its progress read and, unless the progress names a table
    elsewhere, its transactional producer fenced in (`fenced`)."""

    publisher: Publisher
    position: Position
    topic: DataTopic
    fenced: bool = True


@dataclass(frozen=True)
class Begun:
    """A table's start, begun while Spark starts: its steps and its Kafka side (None: one
    it sets up itself)."""

    steps: Waterfall
    kafka: Future[KafkaSide | None]


def kafka_side(
    settings: ProducerSettings, steps: Waterfall, transactions: Transactions | None = None
) -> KafkaSide:
    """The topics created when missing, the progress read, then the transactional producers
    started (transactions: the process's, else the table's own): older ones and the table's
    recorded owner fenced, the progress read again. A progress naming a table at another
    place is left unfenced: it may be another table's topic, which only the table's Delta id
    tells (producer/lake/start.py check_identity)."""
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


def kafka_sides(
    settings: ProducerSettings,
    sources: list[SourceSection],
    steps: Mapping[str, Waterfall],
    transactions: Transactions,
) -> dict[str, KafkaSide | None]:
    """The Kafka sides of the tables of sources (by topic), set up together; None for a
    table left to kafka_side. Raises what fails them all."""
    kafka, limit = settings.kafka.client_config(), settings.kafka.max_message_bytes
    steps = {s.topic_name: steps[s.topic_name] for s in sources}
    with _all(steps, "topics"):
        wanted = [Wanted(s.topic_name, s.partitions, s.created_topic_config) for s in sources]
        topics = ensure_all(kafka, wanted, limit)
    publishers = [
        Publisher(kafka, s.topic_name, s.tombstones, limit, transactions) for s in sources
    ]
    first = {p.topic: Reading(p.progress) for p in publishers}
    with _all(steps, "progress"):  # a topic just made is empty: its claim is read in 4.
        unread = [r for t, r in first.items() if not topics[t].progress_created]
        read_together(kafka, unread)
    sides: dict[str, KafkaSide | None] = {}
    ours = []
    for source, publisher in zip(sources, publishers, strict=True):
        claimed = first[publisher.topic].position()
        if claimed.identity is not None and claimed.identity.table != source.table:
            sides[publisher.topic] = KafkaSide(publisher, claimed, topics[publisher.topic], False)
        else:
            ours.append(publisher)
    taken = {}
    if ours:  # else nothing is fenced: the topics may be other tables' (check_identity)
        with _all({p.topic: steps[p.topic] for p in ours}, "kafka_transactions"):
            transactions.start()
            taken = take_over_together(kafka, ours, first)
    for publisher in ours:
        position = taken.get(publisher.topic)
        found = topics[publisher.topic]
        sides[publisher.topic] = None if position is None else KafkaSide(publisher, position, found)
    return sides


@contextmanager
def _all(steps: Mapping[str, Waterfall], name: str) -> Iterator[None]:
    """Time the block as step name of every table's start."""
    began = time.monotonic()
    yield
    for waterfall in steps.values():
        waterfall.log(name, time.monotonic() - began)


def kafka_sides_in_thread(
    settings: ProducerSettings, steps: Mapping[str, Waterfall], transactions: Transactions
) -> dict[str, Future[KafkaSide | None]]:
    """kafka_sides(...) of every table, by topic, set up in a thread of its own while this
    one goes on, in groups that double from FIRST_GROUP: the first tables are set up at
    once, while the broker still makes the later ones' partitions (about 20 ms each when
    the cores are busy). What fails every table alike is each later one's failure too;
    anything else leaves a group's tables to set up their own, as after a failure."""
    sources = settings.sources()
    sides: dict[str, Future[KafkaSide | None]] = {s.topic_name: Future() for s in sources}

    def set_up() -> None:
        start, size = 0, FIRST_GROUP
        while start < len(sources):
            group = sources[start : start + size]
            try:
                found = kafka_sides(settings, group, steps, transactions)
            except BaseException as exc:  # noqa: BLE001 - each table raises it, or sets up its own
                if fails_every_table(exc) or not isinstance(exc, Exception):
                    for source in sources[start:]:
                        sides[source.topic_name].set_exception(exc)
                    return
                log.warning("the tables' Kafka side set up together failed", exc_info=exc)
                found = {}
            for source in group:
                sides[source.topic_name].set_result(found.get(source.topic_name))
            start, size = start + len(group), size * 2
        _registry_ready(settings)

    threading.Thread(target=set_up, name="kafka-setup", daemon=True).start()
    return sides


def _registry_ready(settings: ProducerSettings) -> None:
    """The process's registry client, made while Spark starts: importing its library and
    loading its TLS context took 0.2 s of a first read otherwise. A failure here is left to
    the first table's own connect, which names it."""
    with suppress(Exception):
        registry_client(settings.schema_registry.client_config())


def kafka_side_in_thread(
    settings: ProducerSettings, steps: Waterfall, transactions: Transactions | None = None
) -> Future[KafkaSide | None]:
    """kafka_side(...), set up in a thread of its own while this one goes on."""

    def set_up() -> KafkaSide | None:
        return kafka_side(settings, steps, transactions)

    pool = ThreadPoolExecutor(1, thread_name_prefix="kafka-setup")
    try:
        return pool.submit(set_up)
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task


def discard(kafka: Future[KafkaSide | None]) -> None:
    """Close the publisher a Kafka side set up in vain, once it is set up."""

    def close(done: Future[KafkaSide | None]) -> None:
        if not done.cancelled() and done.exception() is None:
            side = done.result()
            if side is not None:
                side.publisher.close()

    kafka.add_done_callback(close)
