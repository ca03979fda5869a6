"""Where a Kafka engine's new group starts reading, and its offsets set: step 2 of
consumer/kafka_engine/evolve.py, and the first framed message a late engine checks
(consumer/kafka_engine/late.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from consumer.group.registry import schema_id
from schemas.errors import ConfigError, ServiceUnavailableError
from services import offsets

TIMEOUT_S = 10


def starts(
    kafka: Mapping[str, Any], group: str, topic: str, built: int, begin: Mapping[int, int]
) -> list[TopicPartition]:
    """Where a new group takes over from group in each partition group has read: at the
    first message of a schema newer than built that group read, else where group stands.
    built 0 (unknown): where group stands. In a partition group has not committed in, at
    the generation's start (begin); where begin has none, the engine's own reset reads
    from the partition's first message, as the old group would have."""
    probe = reader(kafka, group)  # committed() only: never joins
    try:
        partitions = sorted(probe.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions)
        asked = [TopicPartition(topic, p) for p in partitions]
        moved = []
        for committed in probe.committed(asked, timeout=TIMEOUT_S):
            if committed.offset < 0:  # nothing read there yet: not an older generation's
                if committed.partition in begin:
                    at = begin[committed.partition]
                    moved.append(TopicPartition(topic, committed.partition, at))
                continue
            low, _ = probe.get_watermark_offsets(committed, timeout=TIMEOUT_S)
            start = _first_newer(probe, committed, low, built) if built else committed.offset
            moved.append(TopicPartition(topic, committed.partition, start))
        return moved
    finally:
        probe.close()


def reader(kafka: Mapping[str, Any], group: str) -> Consumer:
    """A read_committed consumer that assign()s and reads single messages (framed_at), and
    says where a partition ends; it never joins `group` nor commits. A start that
    compaction or retention passed reads from the first message left."""
    return Consumer(
        {
            **kafka,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 10,
            "auto.offset.reset": "earliest",
        }
    )


def _first_newer(probe: Consumer, committed: TopicPartition, low: int, built: int) -> int:
    """The first offset in [low, committed) of a message of a schema above built, by
    bisection; committed.offset when there is none."""
    high = committed.offset
    while low < high:
        middle = (low + high) // 2
        found = framed_at(probe, committed.topic, committed.partition, middle, high)
        if found is None:  # nothing framed in [middle, high)
            high = middle
        elif found[1] > built:
            high = found[0]
        else:
            low = found[0] + 1
    return high


def framed_at(
    probe: Consumer, topic: str, partition: int, offset: int, before: int
) -> tuple[int, int] | None:
    """(offset, schema id) of the first framed value at or after offset and before `before`."""
    probe.assign([TopicPartition(topic, partition, offset)])
    while True:
        message = probe.poll(TIMEOUT_S)
        if message is None:
            return None
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                raise ServiceUnavailableError(f"cannot read {topic} [{partition}]: {error}")
            return None
        at = message.offset() or 0
        if at >= before:
            return None
        found = schema_id(message.value() or b"")
        if found is not None:
            return at, found


@retry(
    retry=retry_if_exception_type(ConfigError),
    stop=stop_after_delay(30),
    wait=wait_fixed(1),
    reraise=True,
)
def reset_new(
    kafka: Mapping[str, Any],
    group: str,
    start: list[TopicPartition],
    taken: Callable[[], bool] = lambda: False,
) -> bool:
    """The new group's offsets set (True); retried while Kafka settles the new group. False
    once refused because taken(): another apply's Kafka table reads with it, at the offsets
    that apply set (two applies at once: a cron job and a watcher)."""
    try:
        offsets.reset(kafka, group, start)
    except ConfigError:
        if taken():
            return False
        raise
    return True
