"""Kafka's side of a table's start: its topics made, its progress read and its
transactional producers fenced in (`kafka_side`), in a thread beside Spark's side (the
session, the Delta log); each step logged in the start's waterfall (producer/steps.py).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from producer.publish.publish import Publisher, Transactions
from producer.publish.topics import DataTopic, ensure_topics
from producer.steps import Waterfall
from schemas.progress import Position

if TYPE_CHECKING:
    from producer.settings import ProducerSettings


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
