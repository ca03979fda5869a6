"""Where each partition of a topic ends now: for a read_committed reader (its last stable
offset, where the first transaction still open begins) or for any reader (its high
watermark, open transactions' messages included). A bootstrap's boundary
(consumer/rebuild/boundary.py) and verify's marks (verify/consumed.py) read them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Literal

from confluent_kafka import Consumer, KafkaException, TopicPartition

from services.kafka_errors import error_of
from services.service_errors import client_failure

TIMEOUT_S = 30


def stable_offsets(kafka_config: Mapping[str, Any], topic: str) -> dict[int, int]:
    """Step 1: per partition, the end of what a read_committed reader can read now."""
    return _ends(kafka_config, topic, "read_committed")


def high_watermarks(kafka_config: Mapping[str, Any], topic: str) -> dict[int, int]:
    """Per partition, the end of what has been written, open transactions' messages too."""
    return _ends(kafka_config, topic, "read_uncommitted")


def _ends(
    kafka_config: Mapping[str, Any],
    topic: str,
    isolation: Literal["read_committed", "read_uncommitted"],
) -> dict[int, int]:
    with offsets_probe(kafka_config, isolation, f"reading the offsets of {topic}") as probe:
        partitions = probe.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
        return {p: partition_end(probe, topic, p) for p in sorted(partitions)}


def partition_end(probe: Any, topic: str, partition: int) -> int:
    """The end of `partition` for `probe`'s isolation level."""
    return int(probe.get_watermark_offsets(TopicPartition(topic, partition), TIMEOUT_S)[1])


@contextmanager
def offsets_probe(
    kafka_config: Mapping[str, Any],
    isolation: Literal["read_committed", "read_uncommitted"],
    doing: str,
) -> Iterator[Any]:
    """A consumer that only asks for offsets: it never joins a group nor commits; its
    isolation level decides whether a partition's end is its LSO or its high watermark."""
    probe = Consumer(
        {**kafka_config, "group.id": "cdfbridge-bootstrap-probe", "isolation.level": isolation}
    )
    try:
        yield probe
    except KafkaException as exc:
        where = str(kafka_config.get("bootstrap.servers", "?"))
        raise client_failure(error_of(exc), where, doing) from exc
    finally:
        probe.close()
