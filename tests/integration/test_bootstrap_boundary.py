"""The bootstrap's boundary covers every transaction below it: when a transaction's commit
marker is on the data partitions but not yet on the progress partition, the start point
waits for the progress record instead of loading the lake at the version before it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from consumer.rebuild import boundary
from consumer.rebuild.bootstrap import StartPoint, start_point
from schemas.naming import progress_topic
from schemas.progress import Generation, encode, record_key
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def _transactional(endpoints: Endpoints) -> Any:
    producer = Producer({"bootstrap.servers": endpoints.kafka, "transactional.id": unique("t")})
    producer.init_transactions(30)
    producer.begin_transaction()
    return producer


def _version(producer: Any, topic: str, version: int) -> None:
    value = encode(version, Generation(), None, ())
    producer.produce(progress_topic(topic), value, record_key(topic))


def test_a_progress_record_whose_marker_lags_the_data_is_waited_for(
    endpoints: Endpoints, kafka_admin: Any, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(partitions=2)
    created = kafka_admin.create_topics([NewTopic(progress_topic(topic), 1, 1)])
    created[progress_topic(topic)].result(timeout=30)
    kafka = {"bootstrap.servers": endpoints.kafka}
    first = _transactional(endpoints)  # version 4: its changes and its record, committed
    first.produce(topic, b"v4", b"a", partition=0)
    _version(first, topic, 4)
    first.commit_transaction(30)
    # Version 5 as Kafka shows it while its transaction's markers are half written: its
    # changes committed on the data partitions, its record still open on the progress one.
    record = _transactional(endpoints)
    _version(record, topic, 5)
    record.flush(30)
    changes = _transactional(endpoints)
    changes.produce(topic, b"v5", b"b", partition=1)
    changes.commit_transaction(30)

    found: list[StartPoint] = []
    reader = threading.Thread(target=lambda: found.append(start_point(kafka, topic)))
    reader.start()
    time.sleep(3)
    assert not found, "the start point did not wait for the progress partition"
    record.commit_transaction(30)
    reader.join(30)

    point = found[0]
    assert point.version == 5  # loaded at 5: following from the offsets misses nothing
    assert point.offsets[1] >= 1  # past version 5's change, which the snapshot holds


def test_a_progress_transaction_open_too_long_is_named(
    endpoints: Endpoints,
    kafka_admin: Any,
    topic_factory: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = topic_factory(partitions=1)
    kafka_admin.create_topics([NewTopic(progress_topic(topic), 1, 1)])[
        progress_topic(topic)
    ].result(timeout=30)
    held = _transactional(endpoints)
    _version(held, topic, 1)
    held.flush(30)
    monkeypatch.setattr(boundary, "SETTLE_S", 1.0)
    try:
        with pytest.raises(boundary.ProgressUnsettledError, match="transaction open for"):
            start_point({"bootstrap.servers": endpoints.kafka}, topic)
    finally:
        held.abort_transaction(30)
