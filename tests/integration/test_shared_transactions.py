"""Many tables' chunks in one Kafka transaction (producer/publish/transactor.py), on the real broker:
a topic's refusal takes only its chunk out, a producer taking a table over aborts the open
transaction of the one its progress names (producer/publish/takeover.py), and that one stops."""

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from producer.errors import FencedError, MessageTooLargeError
from producer.publish.publish import Publisher, Transactions
from producer.publish.topics import ensure_topics
from schemas.progress import Generation as Gen
from schemas.progress import encode
from services.settings import MAX_MESSAGE_BYTES, KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def rows(*keys: bytes) -> pa.RecordBatch:
    values = [b"v-" + key for key in keys]
    return pa.RecordBatch.from_pydict(
        {"key": list(keys), "value": values, "_is_delete": [False] * len(keys)}
    )


def settled(read: Callable[[], object], expected: object) -> object:
    """read()'s answer once it is expected (10 s at most): Kafka writes a commit's markers
    just after the commit returns, and a read_committed reader sees the commit then."""
    deadline = time.monotonic() + 10
    while (found := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def topics(kafka: KafkaConfig, max_message_bytes: int = MAX_MESSAGE_BYTES) -> str:
    """A data topic of one partition and its progress topic."""
    topic = unique("shared")
    ensure_topics(kafka, topic, 1, max_message_bytes)
    return topic


def published_once(kafka: KafkaConfig, topic: str, key: bytes) -> Publisher:
    """The publisher of a deployment of its own, which has published key as version 1."""
    owner = Publisher(kafka, topic, transactions=Transactions(kafka, unique("cdfbridge-lake")))
    owner.start()
    assert owner.publish([rows(key)], 1, stop=lambda: False) == 1
    return owner


def committed(endpoints: Endpoints, topic: str) -> list[bytes]:
    """The keys a read_committed reader sees in topic's one partition, in order."""
    reader = Consumer(
        {
            "bootstrap.servers": endpoints.kafka,
            "group.id": unique("reader"),
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    keys: list[bytes] = []
    try:
        while True:
            message = reader.poll(10)
            assert message is not None, f"no end of {topic} within 10 s"
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                return keys
            assert error is None, error
            keys.append(message.key() or b"")
    finally:
        reader.close()


def test_chunks_handed_together_share_one_transaction_and_a_refused_one_leaves_alone(
    endpoints: Endpoints,
) -> None:
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    fine = topics(kafka)
    tight = topics(kafka, max_message_bytes=1000)
    transactions = Transactions(kafka, unique("cdfbridge-lake"))
    publishers = {t: Publisher(kafka, t, transactions=transactions) for t in (fine, tight)}
    for publisher in publishers.values():
        assert publisher.start().version is None
    big = pa.RecordBatch.from_pydict(
        {"key": [b"big"], "value": [os.urandom(5000)], "_is_delete": [False]}
    )
    results: dict[str, Any] = {}

    def hand(topic: str, batch: pa.RecordBatch) -> None:
        try:
            results[topic] = publishers[topic].publish([batch], 3, stop=lambda: False)
        except Exception as exc:  # noqa: BLE001 - compared below
            results[topic] = exc

    threads = [
        threading.Thread(target=hand, args=(fine, rows(b"a", b"b"))),
        threading.Thread(target=hand, args=(tight, big)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert results[fine] == 2  # committed on the transaction's second run, without tight's
    assert isinstance(results[tight], MessageTooLargeError)
    assert f"does not fit topic {tight}" in str(results[tight])
    assert settled(lambda: committed(endpoints, fine), [b"a", b"b"]) == [b"a", b"b"]
    assert committed(endpoints, tight) == []
    assert settled(lambda: publishers[fine].progress.read().version, 3) == 3
    assert publishers[tight].progress.read().version is None
    transactions.close()


def test_taking_a_table_over_aborts_the_owners_open_transaction_and_stops_the_owner(
    endpoints: Endpoints,
) -> None:
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    topic = topics(kafka)
    owner = published_once(kafka, topic, b"1")
    first = owner.transactions
    # The owner dies between its messages and its commit: a transaction left open.
    handle = first.head._producer
    handle.begin_transaction()
    handle.produce(topic, b"v-2", b"2")
    handle.produce(owner.progress.topic, *owner.progress.record(2))
    handle.flush(10)

    second = Transactions(kafka, unique("cdfbridge-lake-b"))
    taker = Publisher(kafka, topic, transactions=second)
    position = taker.start()  # fences the owner that the progress record names

    assert position.version == 1 and position.owner == first.owner
    assert taker.publish([rows(b"2")], 2, stop=lambda: False) == 1
    # The open transaction was aborted: its "2" is not there, the taker's is.
    assert settled(lambda: committed(endpoints, topic), [b"1", b"2"]) == [b"1", b"2"]
    assert taker.progress.read().owner == second.owner
    with pytest.raises(FencedError, match=first.owner):
        owner.publish([rows(b"3")], 3, stop=lambda: False)
    first.close()
    second.close()


def test_a_table_last_published_by_its_own_producer_of_before_is_taken_over(
    endpoints: Endpoints,
) -> None:
    """Records that name no owner were written by `cdfbridge-<topic>`, the one transactional
    id per table of the release before: its open transaction is aborted too."""
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    topic = topics(kafka)
    old = Producer({**kafka, "transactional.id": f"cdfbridge-{topic}"})
    old.init_transactions(30)
    progress_topic = Publisher(kafka, topic).progress.topic
    old.begin_transaction()
    old.produce(topic, b"v-1", b"1")
    old.produce(progress_topic, encode(1, Gen(), None, ()), topic.encode())
    old.commit_transaction(30)
    old.begin_transaction()  # killed with a transaction open
    old.produce(topic, b"v-2", b"2")
    old.flush(10)

    transactions = Transactions(kafka, unique("cdfbridge-lake"))
    publisher = Publisher(kafka, topic, transactions=transactions)
    position = publisher.start()

    assert position.version == 1 and position.owner is None
    assert publisher.publish([rows(b"2")], 2, stop=lambda: False) == 1
    assert settled(lambda: committed(endpoints, topic), [b"1", b"2"]) == [b"1", b"2"]
    transactions.close()


def test_two_producers_taking_one_table_at_once_never_both_publish_a_version(
    endpoints: Endpoints,
) -> None:
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    topic = topics(kafka)
    owner = published_once(kafka, topic, b"v1")
    contenders = [
        Publisher(kafka, topic, transactions=Transactions(kafka, unique(n))) for n in "bc"
    ]
    together = threading.Barrier(len(contenders))
    started: dict[int, Any] = {}

    def start(i: int) -> None:
        together.wait()
        try:
            started[i] = contenders[i].start()
        except FencedError as exc:
            started[i] = exc

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(contenders))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    published: list[int] = []
    stopped: list[FencedError] = []
    for i, outcome in started.items():  # each publishes the version after the one it read
        if isinstance(outcome, FencedError):
            stopped.append(outcome)
            continue
        version = (outcome.version or 0) + 1
        try:
            contenders[i].publish([rows(b"v%d" % version)], version, stop=lambda: False)
            published.append(version)
        except FencedError as exc:
            stopped.append(exc)

    assert len(published) <= 1 and stopped  # one went on at most: the others were fenced
    keys = committed(endpoints, topic)
    assert len(keys) == len(set(keys)), f"a version published twice: {keys}"
    with pytest.raises(FencedError):
        owner.publish([rows(b"v9")], 9, stop=lambda: False)
    for publisher in [owner, *contenders]:
        publisher.transactions.close()


def test_a_progress_topic_of_several_partitions_is_written_and_read_in_its_first(
    endpoints: Endpoints, kafka_admin: Any
) -> None:
    """A progress topic made by hand, or by the broker's auto-creation, may have several
    partitions: records and claims still go to, and are read from, partition 0."""
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    topic = unique("shared")
    created = kafka_admin.create_topics([NewTopic(f"{topic}.progress", 3, 1)])
    for future in created.values():
        future.result(30)
    ensure_topics(kafka, topic, 1)  # the data topic; the progress topic is left as it is
    publisher = Publisher(kafka, topic)

    assert publisher.start().version is None  # claimed, and the claim read back
    assert publisher.publish([rows(b"v1")], 1, stop=lambda: False) == 1
    assert settled(lambda: publisher.progress.read().version, 1) == 1
    publisher.close()
