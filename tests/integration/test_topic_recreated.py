"""A table's data topic deleted and created again lacks the history its progress records
speak of: the producer never creates it through a produce, and at its next start it stops,
naming the resync, instead of publishing on as if the topic held the table's past."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from producer.errors import KafkaFatalError, TopicRecreatedError
from producer.publish.publish import Publisher, Transactions
from producer.publish.sends import producer_config
from producer.resync import resync_command as resync
from producer.run import run
from schemas.errors import CdfBridgeError, TransientError
from schemas.progress import encode
from services.kafka_topics import described
from services.progress_topic import PROGRESS_PARTITION, Progress
from services.settings import MAX_MESSAGE_BYTES, KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_shared_transactions import committed, rows, settled, topics
from tests.integration.test_table_identity import write
from tests.producer_helpers import read_topic, settings

pytestmark = [pytest.mark.integration]


def test_the_transactional_producer_never_creates_a_topic_it_produces_to(
    endpoints: Endpoints,
) -> None:
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    topic = unique("never-created")
    producer = Producer(producer_config(kafka, unique("txn"), MAX_MESSAGE_BYTES))
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"value", b"key")
    producer.flush(3)  # its metadata request for the topic has gone out and been answered

    assert described(AdminClient(kafka), [topic]) == {}
    producer.abort_transaction(30)


def test_a_topic_deleted_under_a_shared_transaction_is_not_created_again_and_loses_nothing(
    endpoints: Endpoints,
) -> None:
    """Kafka answers a transaction holding a deleted topic's messages in one of three ways,
    all seen here: it refuses them at once, the commit times out (60 s), or the abort after
    the refusal fails with INVALID_TXN_STATE, which leaves the transactional producer
    unusable (fatal). In every case the topic stays deleted, the other table's topic holds
    its versions exactly once, and a restart publishes on."""
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    kept, gone = topics(kafka), topics(kafka)
    transactions = Transactions(kafka, unique("cdfbridge-lake"))
    publishers = {t: Publisher(kafka, t, transactions=transactions) for t in (kept, gone)}
    for publisher in publishers.values():
        publisher.start()
    results: dict[str, Any] = {}

    def hand(topic: str, version: int) -> None:
        try:
            batch = rows(f"{topic}-{version}".encode())
            results[topic] = publishers[topic].publish([batch], version, stop=lambda: False)
        except Exception as exc:  # noqa: BLE001 - compared below
            results[topic] = exc

    def both(version: int) -> None:
        threads = [threading.Thread(target=hand, args=(t, version)) for t in (kept, gone)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)

    both(1)  # the producer now knows both topics
    admin = AdminClient(kafka)
    admin.delete_topics([gone])[gone].result(30)
    _wait_for(lambda: gone not in described(admin, [gone]))
    both(2)
    transactions.close()

    assert isinstance(results[gone], CdfBridgeError), results
    assert gone not in described(admin, [gone])  # not created again by the produce
    if results[kept] != 1:  # failed with the deleted topic's transaction: a restart resumes
        assert isinstance(results[kept], TransientError | KafkaFatalError), results
    restarted = Publisher(kafka, kept, transactions=Transactions(kafka, unique("cdfbridge-lake")))
    if restarted.start().version == 1:
        assert restarted.publish([rows(f"{kept}-2".encode())], 2, stop=lambda: False) == 1
    restarted.transactions.close()
    expected = [f"{kept}-1".encode(), f"{kept}-2".encode()]
    assert settled(lambda: committed(endpoints, kept), expected) == expected


@pytest.mark.spark
@pytest.mark.parametrize("older_record", [False, True])
def test_a_data_topic_deleted_and_created_again_stops_the_producer_naming_the_resync(
    spark: Any, endpoints: Endpoints, tmp_path: Path, older_record: bool
) -> None:
    path, topic = str(tmp_path / "orders"), unique("recreated")
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    admin = AdminClient(kafka)
    write(path, 3)
    run(settings(endpoints, path, "id", topic=topic, until_version=2), spark=spark)
    first_id = described(admin, [topic])[topic]
    assert Progress(kafka, topic).read().topic_id == first_id
    why = rf"Kafka id is \S+; .* id {re.escape(first_id)}\."  # base64: '+' and '/' may appear
    if older_record:  # a record written before records named the topic's id
        _rewrite_without_topic_id(kafka, topic)
        why = r"missing at this start, though its progress counts versions up to 2\."
    admin.delete_topics([topic])[topic].result(30)
    _wait_for(lambda: topic not in described(admin, [topic]))

    with pytest.raises(TopicRecreatedError, match=rf"{why}.*resync"):
        run(settings(endpoints, path, "id", topic=topic, until_version=2), spark=spark)
    if older_record:  # the next start finds the topic there, and the record says it lost
        again = r"an earlier start found it missing, though .* versions up to 2\."
        with pytest.raises(TopicRecreatedError, match=rf"{again}.*resync"):
            run(settings(endpoints, path, "id", topic=topic, until_version=2), spark=spark)

    assert read_topic(endpoints, topic) == []  # made again by the start, and left empty
    resync.request(kafka, topic, wait_s=0)
    run(settings(endpoints, path, "id", topic=topic, until_version=2), spark=spark)
    position = Progress(kafka, topic).read()
    assert (position.version, position.generation.number) == (2, 1)
    assert position.topic_id == described(admin, [topic])[topic] != first_id
    # A reader starting late finds the whole table: the new generation's snapshot.
    assert sorted(record.key["id"] for record in read_topic(endpoints, topic)) == list(range(30))


def _rewrite_without_topic_id(kafka: KafkaConfig, topic: str) -> None:
    progress = Progress(kafka, topic)
    position = progress.read()
    fields = position.generation, position.identity, position.hashed or ()
    record = encode(position.version, *fields, value_schema=position.value_schema)
    writer = Producer(dict(kafka))
    writer.produce(progress.topic, record, progress.key, partition=PROGRESS_PARTITION)
    assert writer.flush(10) == 0
    assert progress.read().topic_id is None


def _wait_for(condition: Any, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not met in time"
        time.sleep(0.5)
