"""Where an evolve's new Kafka-engine group starts (consumer/kafka_engine/evolve.py, step 2)
in partitions the old group never committed in: at the current generation's start, not at
the partition's first message, which may be an older generation's (real Kafka)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer

from consumer.kafka_engine.new_group import reset_new, starts
from services import offsets
from tests.conftest import unique


def test_a_partition_the_old_group_never_read_starts_at_the_generations_start(
    endpoints: Any, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(partitions=3)
    kafka = {"bootstrap.servers": endpoints.kafka}
    producer = Producer(kafka)
    for partition in range(3):
        for n in range(5):  # offsets 0-4: 0-2 an older generation, 3-4 the current one
            producer.produce(topic, value=b"%d" % n, partition=partition)
    assert producer.flush(30) == 0
    old = unique("engine")
    reset_new(kafka, old, offsets.at(topic, {0: 4}))  # read only in partition 0

    found = starts(kafka, old, topic, 0, {0: 3, 1: 3})

    assert sorted((tp.partition, tp.offset) for tp in found) == [(0, 4), (1, 3)]
