"""Kafka clients as the consumer needs them: the group member's settings, offset commits
whose every partition is checked, and the dead-letter topic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import NewTopic

from consumer.group.errors import CommitRefusedError, OffsetsRefusedError, TopicRefusedError
from schemas.errors import CdfBridgeError, ServiceUnavailableError
from services.kafka_errors import describe, error_of, passing
from services.kafka_topics import admin_client, created
from services.retry import retrying
from services.settings import MAX_MESSAGE_BYTES

# A dead letter is its message plus headers naming the error and where it came from.
DEAD_LETTER_HEADROOM = 64 * 1024
TIMEOUT_S = 30  # per look-up of committed offsets
COMMITTED_ATTEMPTS = 4
# librdkafka holds up to queued.max.messages.kbytes fetched ahead per partition (its fetch
# queue; rdkafka_fetcher.c): a topic's share of the prefetch memory is split among its
# partitions within these bounds.
PREFETCH_MAX_KB = 128 * 1024
PREFETCH_MIN_KB = 1024
# A topic not there yet when its member starts is taken to have the producer's default.
ASSUMED_PARTITIONS = 3


def prefetch_kbytes(share_mb: float, partitions: int | None) -> int:
    """queued.max.messages.kbytes for each of a topic's `partitions` (None: not known)."""
    each = share_mb * 1024 / (partitions or ASSUMED_PARTITIONS)
    return int(min(PREFETCH_MAX_KB, max(PREFETCH_MIN_KB, each)))


def consumer_config(
    client_config: Mapping[str, Any],
    group: str,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    prefetch_kb: int = PREFETCH_MAX_KB,
) -> dict[str, Any]:
    """Offsets are committed by hand, after ClickHouse has the rows; uncommitted
    transactions are never read; rebalances move only the partitions that change owner.
    A fetch always holds the largest message the producer may send; `prefetch_kb` bounds
    what each partition holds fetched ahead (prefetch_kbytes)."""
    fetch = max(64 * 1024 * 1024, max_message_bytes)
    return {
        # Prefetch whole batches' worth without pausing: librdkafka otherwise backs off for
        # a second whenever a partition's queue holds 100k messages. Settings may tune these
        # (CDFBRIDGE_KAFKA__PROPERTIES).
        "fetch.max.bytes": fetch,
        "receive.message.max.bytes": max(100_000_000, fetch + 2**20),
        # Smaller than a batch: a response is parsed whole before its first message is
        # handed over, so the first rows of a backlog arrive sooner.
        "max.partition.fetch.bytes": 2 * 1024 * 1024,
        "queued.min.messages": 1_000_000,
        "queued.max.messages.kbytes": prefetch_kb,
        "fetch.queue.backoff.ms": 0,
        "fetch.wait.max.ms": 100,  # an idle partition answers (and reports its end) sooner
        **client_config,
        # What the commit-after-insert guarantee rests on: never overridden.
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
        # The end of a partition cuts its batch early (consumer/group/batch.py) and tells
        # --until-caught-up when to stop.
        "enable.partition.eof": True,
    }


def committed(consumer: Consumer, partitions: list[TopicPartition]) -> list[TopicPartition]:
    """The group's committed offsets of `partitions` (its member's own look-up), asked again
    when it fails in a way a later attempt can get past: a busy coordinator times out."""
    wait = retrying("the group's committed offsets", max_backoff_s=5, attempts=COMMITTED_ATTEMPTS)
    return wait(_committed, consumer, partitions)


def _committed(consumer: Consumer, partitions: list[TopicPartition]) -> list[TopicPartition]:
    try:
        return list(consumer.committed(partitions, timeout=TIMEOUT_S))
    except KafkaException as exc:
        error, topic = error_of(exc), partitions[0].topic
        if passing(error):
            raise ServiceUnavailableError(
                f"reading the committed offsets of {topic} failed: {describe(error)}"
            ) from exc
        raise OffsetsRefusedError(topic, describe(error)) from exc


def commit(consumer: Consumer, offsets: list[TopicPartition]) -> None:
    """One synchronous commit, every partition's result checked: a failure a later attempt
    can get past is a ServiceUnavailableError, any other a CommitRefusedError."""
    try:
        results = consumer.commit(offsets=offsets, asynchronous=False)
    except KafkaException as exc:  # the request as a whole failed
        where = ", ".join(f"offset {tp.offset} of partition {tp.partition}" for tp in offsets)
        raise commit_error(offsets[0].topic, where, exc.args[0]) from exc
    failure = commit_failure([(tp.topic, tp.partition, tp.offset, tp.error) for tp in results])
    if failure is not None:
        raise failure


CommitResult = tuple[str, int, int, KafkaError | None]  # topic, partition, offset, error


def commit_failure(results: Iterable[CommitResult]) -> CdfBridgeError | None:
    """The error of the first partition whose commit failed; None when all were committed."""
    for topic, partition, offset, error in results:
        if error is not None:
            return commit_error(topic, f"offset {offset} of partition {partition}", error)
    return None


def commit_error(topic: str, where: str, error: KafkaError) -> CdfBridgeError:
    """Transient when a later attempt can succeed (services/kafka_errors.py), else terminal."""
    if passing(error):
        return ServiceUnavailableError(f"committing {where} of {topic} failed: {describe(error)}")
    return CommitRefusedError(topic, where, describe(error))


def ensure_topic(
    client_config: Mapping[str, Any],
    topic: str,
    partitions: int = 1,
    max_message_bytes: int = MAX_MESSAGE_BYTES + DEAD_LETTER_HEADROOM,
) -> None:
    """Create `topic` unless it exists (the dead-letter topic, on start-up)."""
    admin = admin_client(client_config)
    config = {"max.message.bytes": str(max_message_bytes)}
    try:
        created(admin, [NewTopic(topic, partitions, config=config)])
    except KafkaException as exc:
        error = error_of(exc)
        if error.retriable():
            raise ServiceUnavailableError(f"cannot create topic {topic}: {error}") from exc
        raise


def partition_count(client_config: Mapping[str, Any], topic: str) -> int | None:
    """How many partitions the topic has now; None when it is not there or Kafka does not
    answer (the member's own start then waits or fails as it would). Described, not looked
    up in metadata: a metadata request for a missing topic may create it."""
    return partition_counts(client_config, [topic])[0]


def partition_counts(client_config: Mapping[str, Any], topics: list[str]) -> list[int | None]:
    """partition_count of each topic, asked in one request."""
    admin = admin_client(client_config)
    found = admin.describe_topics(TopicCollection(topics), request_timeout=TIMEOUT_S)
    counts: list[int | None] = []
    for topic in topics:
        try:
            counts.append(len(found[topic].result(timeout=TIMEOUT_S).partitions))
        except KafkaException:
            counts.append(None)
    return counts


def topic_id(client_config: Mapping[str, Any], topic: str) -> str:
    """Kafka's id of the topic (KIP-516): a topic deleted and created again under the same
    name gets a new one, and its offsets start at 0 again."""
    admin = admin_client(client_config)
    future = admin.describe_topics(TopicCollection([topic]), request_timeout=30)[topic]
    try:
        return str(future.result(timeout=30).topic_id)
    except KafkaException as exc:
        error = exc.args[0]
        if passing(error):
            raise ServiceUnavailableError(
                f"describing topic {topic} failed: {describe(error)}"
            ) from exc
        raise TopicRefusedError(topic, describe(error)) from exc
