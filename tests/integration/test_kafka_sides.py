"""A lake's tables taken over together at its start (producer/lake/startup.py kafka_sides,
producer/publish/takeover_together.py), on the real broker: a table no other producer wrote
is claimed with the others, one that another producer owns is left to take_over, which
fences that producer and aborts its open transaction, one whose progress names another
table is left unfenced, and two processes starting on the same tables at once never
publish one version of a table twice: one takes each table, or one after the other."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from producer.errors import FencedError
from producer.lake.startup import KafkaSide, kafka_side, kafka_sides
from producer.publish.publish import Publisher, Transactions
from producer.publish.topics import ensure_topics
from producer.settings import ProducerSettings
from producer.steps import Waterfall
from schemas.progress import Identity
from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_shared_transactions import committed, published_once, rows, settled

pytestmark = pytest.mark.integration


def lake(endpoints: Endpoints, topics: list[str], transactional_id: str) -> ProducerSettings:
    tables = [{"table": f"/lake/{t}", "topic": t, "primary_key": ["id"]} for t in topics]
    kafka = {"bootstrap_servers": endpoints.kafka, "transactional_id": transactional_id}
    return ProducerSettings(
        kafka=kafka, source={"metrics_port": None, "partitions": 1}, tables=tables
    )


def started(settings: ProducerSettings, transactions: Transactions) -> dict[str, KafkaSide]:
    """Every table's Kafka side as a start sets it up: together, else alone."""
    steps = {source.topic_name: Waterfall(source.topic_name) for source in settings.sources()}
    together = kafka_sides(settings, settings.sources(), steps, transactions)
    sides = {}
    for source in settings.sources():
        alone = settings.model_copy(update={"source": source, "tables": []})
        topic = source.topic_name
        sides[topic] = together[topic] or kafka_side(alone, steps[topic], transactions)
    return sides


def test_a_start_claims_the_tables_no_one_else_wrote_and_fences_the_owner_of_another(
    endpoints: Endpoints,
) -> None:
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    fresh, owned, elsewhere = (unique(name) for name in ("fresh", "owned", "elsewhere"))
    settings = lake(endpoints, [fresh, owned, elsewhere], unique("cdfbridge-lake"))
    for topic in (owned, elsewhere):
        ensure_topics(kafka, topic, 1)
    owner = published_once(kafka, owned, b"1")
    handle = owner.transactions.head._producer  # the owner dies with a transaction open
    handle.begin_transaction()
    handle.produce(owned, b"v-2", b"2")
    handle.flush(10)
    other = Publisher(kafka, elsewhere, transactions=Transactions(kafka, unique("cdfbridge-x")))
    other.start()
    other.progress.identity = Identity("/another/table", "its-delta-id")
    other.publish([rows(b"a")], 1, stop=lambda: False)
    transactions = Transactions(kafka, settings.transactional_id(), tables=3)
    steps = {t: Waterfall(t) for t in (fresh, owned, elsewhere)}

    together = kafka_sides(settings, settings.sources(), steps, transactions)

    assert together[owned] is None  # left to take_over, which fences its owner
    side = together[fresh]
    assert side is not None and side.fenced and side.position.version is None
    assert Progress(kafka, fresh).read_owners(0)[1].claimant == transactions.owner
    named = together[elsewhere]
    assert named is not None and not named.fenced  # another table's topic: not taken
    assert named.position.identity == Identity("/another/table", "its-delta-id")
    alone = settings.model_copy(update={"source": settings.sources()[1], "tables": []})
    taken = kafka_side(alone, steps[owned], transactions)
    assert taken.position.version == 1 and taken.position.owner == owner.transactions.owner
    assert taken.publisher.publish([rows(b"2")], 2, stop=lambda: False) == 1
    assert settled(lambda: committed(endpoints, owned), [b"1", b"2"]) == [b"1", b"2"]
    with pytest.raises(FencedError):
        owner.publish([rows(b"3")], 3, stop=lambda: False)
    for done in (owner.transactions, other.transactions, transactions):
        done.close()


def test_two_processes_starting_on_the_same_tables_never_publish_one_version_twice(
    endpoints: Endpoints,
) -> None:
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    topics = [unique("contended") for _ in range(3)]
    ensure_topics(kafka, topics[0], 1)
    owner = published_once(kafka, topics[0], b"v1")  # one owned before, two fresh
    processes = [lake(endpoints, topics, unique(f"cdfbridge-{n}")) for n in "bc"]
    transactions = [Transactions(kafka, p.transactional_id(), tables=3) for p in processes]
    together = threading.Barrier(len(processes))
    outcomes: dict[int, dict[str, Any]] = {}

    def start(i: int) -> None:
        together.wait()
        try:
            sides: dict[str, Any] = dict(started(processes[i], transactions[i]))
        except FencedError as exc:
            sides = dict.fromkeys(topics, exc)
        for topic, side in sides.items():  # each publishes the version after the one it read
            if isinstance(side, FencedError):
                continue
            version = (side.position.version or 0) + 1
            try:
                side.publisher.publish([rows(b"v%d" % version)], version, stop=lambda: False)
                sides[topic] = version
            except FencedError as exc:
                sides[topic] = exc
        outcomes[i] = sides

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(processes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)

    assert len(outcomes) == len(processes)
    for topic in topics:
        # Each published the version after the one it read: the same one, if both went on.
        published = [o[topic] for o in outcomes.values() if isinstance(o[topic], int)]
        assert len(published) == len(set(published)), f"{topic}: both published {published}"
        keys = committed(endpoints, topic)
        assert len(keys) == len(set(keys)), f"a version published twice to {topic}: {keys}"
    with pytest.raises(FencedError):
        owner.publish([rows(b"v9")], 9, stop=lambda: False)
    for done in [owner.transactions, *transactions]:
        done.close()
