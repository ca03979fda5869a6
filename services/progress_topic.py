"""The progress topic `<topic>.progress` in Kafka: the producer's record of each transaction
(its format is schemas/progress.py), resync requests, and reading the topic to its end with
read_committed, where the last record of a key wins.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from schemas.naming import progress_topic
from schemas.progress import (
    Generation,
    Identity,
    Part,
    Position,
    claim_key,
    decode,
    decode_claim,
    decode_resync,
    encode,
    encode_claim,
    encode_resync,
    record_key,
    resync_key,
)
from services.kafka_errors import error_of
from services.service_errors import UnreachableError, client_failure
from services.settings import KafkaConfig

READ_TIMEOUT_S = 60.0  # to read the progress topic to its end
# Every record is written to and read from this partition, whatever the topic has (a topic
# created by hand, or by the broker itself, may have more).
PROGRESS_PARTITION = 0


def reader_config(kafka_config: KafkaConfig) -> dict[str, Any]:
    """A consumer that reads progress topics by assign(), with read_committed."""
    return {
        **kafka_config,
        "group.id": "cdfbridge-progress-reader",  # assign() only: never joins or commits
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        # At the end, the broker answers at once instead of waiting 500 ms for more.
        "fetch.wait.max.ms": 10,
    }


@contextmanager
def end_reader(kafka_config: KafkaConfig, doing: str) -> Iterator[Any]:
    """A progress reader (reader_config) told of each partition's end, its failures named
    as `doing`'s."""
    consumer = Consumer(
        {
            **reader_config(kafka_config),
            # The end is signalled, not compared with the high watermark: the last
            # offsets of a transactional topic are commit markers no poll returns.
            "enable.partition.eof": True,
        }
    )
    where = str(kafka_config.get("bootstrap.servers", "?"))
    try:
        yield consumer
    except KafkaException as exc:
        raise client_failure(error_of(exc), where, doing) from exc
    finally:
        consumer.close()


@dataclass
class Owners:
    """Who wrote a progress topic's records: claimant, the producer of the last claim;
    writers, the producers of the records (version records and claims) from offset since
    on, None for a version record that names none; end, the offset after the last read;
    recorded, whether it holds a version record at all."""

    since: int = 0
    end: int = 0
    recorded: bool = False
    claimant: str | None = None
    writers: set[str | None] = field(default_factory=set)

    def wrote(self, offset: int, owner: str | None) -> None:
        if offset >= self.since:
            self.writers.add(owner)


class Progress:
    def __init__(self, kafka_config: KafkaConfig, topic: str) -> None:
        self.kafka_config = kafka_config
        self.data_topic, self.topic = topic, progress_topic(topic)
        self.key = record_key(topic)
        self.resync_key = resync_key(topic)
        self.claim_key = claim_key(topic)
        # What record() writes besides the version: the producer's generation, table,
        # hashed columns, value schema, transactional.id and the data topic's id.
        self.generation = Generation()
        self.identity: Identity | None = None
        self.hashed: tuple[str, ...] = ()
        self.value_schema: int | None = None
        self.owner: str | None = None  # the transactional.id that writes the records
        self.topic_id: str | None = None  # the data topic's Kafka id

    def record(self, version: int | None, part: Part | None = None) -> tuple[bytes, bytes]:
        """The progress record saying version is fully published (None: none yet), and part
        of the next one if `part`, as (value, key): the producer queues it in the
        transaction that publishes them."""
        fields = self.generation, self.identity, self.hashed, part, self.value_schema
        return encode(version, *fields, owner=self.owner, topic_id=self.topic_id), self.key

    def claim(self) -> tuple[bytes, bytes]:
        """The record claiming the topic for owner, as (value, key)."""
        return encode_claim(self.owner or ""), self.claim_key

    def name_value_schema(self, schema_id: int) -> None:
        """The value schema id the records name from now on."""
        self.value_schema = schema_id

    def request_resync(self, producer: Any, generation: int) -> None:
        """Queue a resync request (no transaction needed: it is one record of its own)."""
        value, key = encode_resync(generation), self.resync_key
        producer.produce(self.topic, value, key, partition=PROGRESS_PARTITION)

    def last_version(self) -> int | None:
        return self.read().version

    def read(self) -> Position:
        """Read the topic to its end with read_committed; the last record of a key wins."""
        return self.read_owners(0)[0]

    def generation_here(self, number: int) -> Generation:
        """Generation `number`, starting at the data topic's end offsets now. Called by the
        only producer of the topic once it has fenced the older ones (whose open
        transactions are then aborted): every offset from here on is the new generation's."""
        with end_reader(
            self.kafka_config, f"reading the end offsets of {self.data_topic}"
        ) as consumer:
            topics = consumer.list_topics(self.data_topic, timeout=10).topics
            partitions = sorted(topics[self.data_topic].partitions)
            ends = {
                p: consumer.get_watermark_offsets(TopicPartition(self.data_topic, p), timeout=10)[1]
                for p in partitions
            }
        return Generation(number, ends)

    def read_owners(self, since: int) -> tuple[Position, Owners]:
        """read(), and who wrote the records: the last claim's producer, and the producers
        of the records from offset since on (producer/publish/takeover.py)."""
        reading = Reading(self, since)
        with end_reader(self.kafka_config, f"reading {self.topic}") as consumer:
            if not consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions:
                return Position(), reading.owners  # never published anything
            consumer.assign([TopicPartition(self.topic, PROGRESS_PARTITION, OFFSET_BEGINNING)])
            deadline = time.monotonic() + READ_TIMEOUT_S
            while time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and reading.take(message):
                    return reading.position(), reading.owners
        took = f"reading progress took over {READ_TIMEOUT_S:.0f} s"
        raise UnreachableError("Kafka", self.topic, 1, took)


class Reading:
    """A progress topic's records as they are read from its start: the last record of
    each key, and who wrote them (Owners, from offset since on)."""

    def __init__(self, progress: Progress, since: int = 0) -> None:
        self.progress = progress
        self.owners = Owners(since)
        self.last, self.requested = Position(), 0

    def take(self, message: Any) -> bool:
        """Take a message of the topic's partition; True at its end (its EOF, signalled
        by a consumer with enable.partition.eof); raises KafkaException for its errors."""
        error, progress, owners = message.error(), self.progress, self.owners
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(error)
            owners.end = message.offset()
            return True
        key, offset = message.key(), message.offset()
        if key == progress.key:
            self.last, owners.recorded = decode(message.value()), True
            owners.wrote(offset, self.last.owner)
        elif key == progress.claim_key:
            owners.claimant = decode_claim(message.value())
            owners.wrote(offset, owners.claimant)
        elif key == progress.resync_key:
            self.requested = decode_resync(message.value())
        return False

    def position(self) -> Position:
        return replace(self.last, requested=self.requested)
