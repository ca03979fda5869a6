"""The messages a chunk handed to a transaction (producer/publish/handed.py) is sent as, by the
transaction's Kafka producer (producer/publish/transactor.py).

Each change is one message keyed by its primary key; with tombstones, a delete is followed
by a tombstone of its key that carries the delete in a header (schemas/README.md).
"""

from __future__ import annotations

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Producer

from producer.encode.encode import IS_DELETE, KEY, ORDER, VALUE
from producer.publish.handed import Chunk
from producer.publish.kafka_errors import error_of
from producer.publish.refusals import ChunksRefused, Refused
from schemas.naming import DELETE_HEADER
from services.settings import KafkaConfig

TRANSACTION_TIMEOUT_MS = 600_000


def producer_config(
    kafka_config: KafkaConfig, transactional_id: str, max_message_bytes: int
) -> dict[str, object]:
    """A transactional producer's librdkafka settings."""
    return {
        # Throughput defaults; CDFBRIDGE_KAFKA__PROPERTIES may tune them.
        "linger.ms": 20,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
        "compression.type": "lz4",
        **kafka_config,
        # What exactly-once and per-key ordering rest on: never overridden.
        "transactional.id": transactional_id,
        "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
        "enable.idempotence": True,
        # A topic deleted under the producer stays deleted: created again by a produce, it
        # would take the broker's defaults (not compacted) and lack the table's history.
        # The table fails instead, and its restart names the resync (producer/lake/start.py).
        "allow.auto.create.topics": False,
        "partitioner": "murmur2_random",  # the Java clients': same key, same partition
        # A larger change is refused in produce(), where its key and version are known.
        "message.max.bytes": max_message_bytes,
        # Failures only: no Python call per delivered message.
        "delivery.report.only.error": True,
    }


def send(producer: Producer, chunk: Chunk) -> int:
    """Queue chunk's messages (not its progress record); the rows queued. A change larger
    than the client's limit raises ChunksRefused naming it."""
    rows = 0
    for batch in chunk.batches:
        rows += _send_batch(producer, chunk, batch)
    producer.poll(0)
    return rows


def _send_batch(producer: Producer, chunk: Chunk, batch: pa.RecordBatch) -> int:
    keys = batch.column(KEY).to_pylist()
    values = batch.column(VALUE).to_pylist()
    deletes = batch.column(IS_DELETE).to_pylist() if chunk.tombstones else None
    topic = chunk.topic
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        try:  # the common case inline: a call less per message
            producer.produce(topic, value, key)
        except BufferError:
            producer.poll(0.05)
            produce(producer, topic, value, key)
        except KafkaException as exc:
            if error_of(exc).code() != KafkaError.MSG_SIZE_TOO_LARGE:
                raise
            version = str(batch.column(ORDER)[i].as_py() // 2)
            refused = Refused(error_of(exc), key, version, len(value))
            raise ChunksRefused({chunk: refused}) from exc
        if deletes is not None and deletes[i]:
            # After the delete, for compaction; it carries the delete, which compaction
            # removes first, for readers behind the log cleaner (schemas/README.md).
            produce(producer, topic, None, key, {DELETE_HEADER: value})
    return len(keys)


def produce(
    producer: Producer,
    topic: str,
    value: bytes | None,
    key: bytes,
    headers: dict[str, str | bytes | None] | None = None,
    partition: int = -1,  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner picks
) -> None:
    """One message, retried alone while librdkafka's local queue is full: a retry never
    sends again what was already queued."""
    while True:
        try:
            producer.produce(topic, value, key, partition=partition, headers=headers)
            return
        except BufferError:
            producer.poll(0.05)  # let librdkafka drain the queue
