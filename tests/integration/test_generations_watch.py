"""`rebuild = "auto"`'s one look-out for the process (consumer/rebuild/generations.py), on a
real Kafka and ClickHouse: of the topics it watches, it stops exactly those whose producer
started a generation their table does not hold, including a topic whose progress appears
only after the watch began, and a topic forgotten is never stopped."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from consumer.rebuild import generations
from consumer.rebuild.generations import Generations, Watched
from consumer.settings import ConsumerSettings
from consumer.tables.generation import mark
from consumer.tables.placement import Placement
from producer.publish.topics import ensure_topics
from schemas.progress import Generation
from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings

pytestmark = pytest.mark.integration


class Followed:
    """What the look-out uses of a Pipeline: its settings and its stop."""

    def __init__(self, settings: ConsumerSettings) -> None:
        self.settings, self.stopped = settings, threading.Event()

    def stop(self) -> None:
        self.stopped.set()


def _publish_generation(endpoints: Endpoints, topic: str, number: int) -> None:
    """The topics a producer makes, and the progress record it writes once generation
    `number` has begun."""
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    ensure_topics(kafka, topic, 1)
    progress = Progress(kafka, topic)
    progress.generation = Generation(number, {0: 0})
    value, key = progress.record(3)
    failed: list[object] = []
    producer = Producer(kafka)
    producer.produce(progress.topic, value, key, on_delivery=lambda e, _: failed.append(e))
    assert producer.flush(30) == 0 and failed == [None]
    assert Progress(kafka, topic).read().generation.number == number


def _table(clickhouse: Any, settings: ConsumerSettings, generation: int) -> None:
    target = settings.target()
    clickhouse.command(f"CREATE TABLE {target.name} (id Int64) ORDER BY id")
    if generation:
        mark(Placement(clickhouse), target, generation)


def test_only_the_topics_ahead_of_their_tables_are_stopped(
    endpoints: Endpoints, clickhouse: Any, ch_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(generations, "CHECK_S", 0.2)
    ahead, level, late, forgotten = (unique("gen") for _ in range(4))
    followed = {
        t: Followed(consumer_settings(endpoints, t, ch_database))
        for t in (ahead, level, late, forgotten)
    }
    for topic, held in ((ahead, 0), (level, 1), (late, 0), (forgotten, 0)):
        _table(clickhouse, followed[topic].settings, held)
    _publish_generation(endpoints, ahead, 1)
    _publish_generation(endpoints, level, 1)  # its table holds it already
    _publish_generation(endpoints, forgotten, 1)
    look_out = Generations(followed[ahead].settings)
    watched: dict[str, Watched] = {}
    try:
        watched[forgotten] = look_out.watch(followed[forgotten])
        look_out.forget(watched[forgotten])  # before a round can reach it
        for topic in (ahead, level, late):
            watched[topic] = look_out.watch(followed[topic])

        assert followed[ahead].stopped.wait(30), "the topic ahead of its table was not stopped"
        assert watched[ahead].moved
        _publish_generation(endpoints, late, 1)  # its progress topic is new: found next round
        assert followed[late].stopped.wait(30), "a progress topic made later was not read"
        time.sleep(1.0)  # several more rounds
    finally:
        look_out.close()

    assert (watched[level].moved, followed[level].stopped.is_set()) == (False, False)
    assert (watched[forgotten].moved, followed[forgotten].stopped.is_set()) == (False, False)
