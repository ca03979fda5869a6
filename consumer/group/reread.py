"""Read a batch's messages from Kafka again, for the rare batch that ClickHouse refuses.

Batches keep only values; finding and dead-lettering the poison needs every message's key
and offset as well, so they are fetched again by offset with a group-less consumer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from consumer.group.batch import PartitionBatch
from consumer.group.tombstones import payload
from schemas.errors import ServiceUnavailableError

TIMEOUT_S = 30.0


def messages(client_config: Mapping[str, Any], batch: PartitionBatch) -> list[Message]:
    """The batch's committed messages with a payload (bare tombstones left out), in offset
    order."""
    reader = Consumer(
        {
            **client_config,
            "group.id": "cdfbridge-reread",  # never joined nor committed: assign() only
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        reader.assign([TopicPartition(batch.topic, batch.partition, batch.first_offset)])
        return _read_until(reader, batch.last_offset)
    except KafkaException as exc:
        raise ServiceUnavailableError(
            f"cannot read partition {batch.partition} of {batch.topic} again: {exc}"
        ) from exc
    finally:
        reader.close()


def _read_until(reader: Consumer, last_offset: int) -> list[Message]:
    found: list[Message] = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        for message in reader.consume(10_000, timeout=1.0):
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                return found
            if error is not None:
                raise KafkaException(error)
            offset = message.offset()
            if offset is None or offset > last_offset:
                return found
            if payload(message) is not None:
                found.append(message)
                if offset == last_offset:
                    return found
    raise ServiceUnavailableError(
        f"reading offsets up to {last_offset} again took more than {TIMEOUT_S} s"
    )
