"""The last Delta version fully published, and the topic's generation, kept in Kafka itself.

A compacted topic `<topic>.progress` holds one record per data topic; the producer writes it
inside the transaction of the chunk it describes, so it is visible exactly when the chunk is.
The producer reads it to resume, cdfbridge-verify to know which version to compare, and a
rebuild to know where the topic's current generation starts.

A generation is one unbroken history of the table in the topic: a snapshot, then its Change
Data Feed. `cdfbridge-producer resync` asks for a new one with a record of its own key
(`<topic>#resync`); the producer that follows the topic then snapshots the table at its
latest version and records the offsets the new generation starts at, so a consumer can
rebuild from there and leave every older row behind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from schemas.kafka_errors import error_of
from schemas.naming import progress_topic
from schemas.service_errors import UnreachableError, client_failure
from schemas.settings import KafkaConfig

READ_TIMEOUT_S = 60.0  # to read the progress topic to its end
RESYNC_SUFFIX = b"#resync"  # a character no topic name has


@dataclass(frozen=True)
class Generation:
    """number 0 is the topic's first history; start maps each partition to the first offset
    of this generation (empty for generation 0: the topic's beginning)."""

    number: int = 0
    start: dict[int, int] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        if not self.number:
            return {}
        start = {str(p): offset for p, offset in sorted(self.start.items())}
        return {"generation": self.number, "generation_start": start}

    @classmethod
    def of(cls, record: dict[str, Any]) -> Generation:
        start = record.get("generation_start") or {}
        return cls(int(record.get("generation", 0)), {int(p): int(o) for p, o in start.items()})


@dataclass(frozen=True)
class Identity:
    """The Delta table a topic's changes come from: where it is (as the producer names it)
    and Delta's own id of it (metaData.id), which a table created again at the same path
    does not keep."""

    table: str
    table_id: str

    def fields(self) -> dict[str, Any]:
        return {"table": self.table, "table_id": self.table_id}

    @classmethod
    def of(cls, record: dict[str, Any]) -> Identity | None:
        if "table_id" not in record:
            return None  # written before records named their table
        return cls(str(record["table"]), str(record["table_id"]))


@dataclass(frozen=True)
class Part:
    """A version too large for one transaction, published in several: one per key-hash
    slice of versions first..last (a single version, or a snapshot of it), `slices` in all,
    0..done of them published. A restart publishes the slices after `done`, cut the same way."""

    first: int
    last: int
    slices: int
    done: int
    snapshot: bool = False

    def fields(self) -> dict[str, Any]:
        keys = ("first", "last", "slices", "done", "snapshot")
        return {"part": {key: getattr(self, key) for key in keys}}

    @classmethod
    def of(cls, record: dict[str, Any]) -> Part | None:
        found = record.get("part")
        return None if not found else cls(**found)


@dataclass(frozen=True)
class Position:
    """What the progress topic says of one data topic."""

    version: int | None = None  # the last Delta version fully published; None: nothing yet
    generation: Generation = field(default_factory=Generation)
    requested: int = 0  # the newest generation a resync asked for
    identity: Identity | None = None  # the table the last record names
    part: Part | None = None  # the version being published in parts, when one is
    # The columns published hashed (--hash-columns), for a bootstrap from the lake to hash
    # alike; None when the record predates them.
    hashed: tuple[str, ...] | None = None

    @property
    def resync_pending(self) -> bool:
        return self.requested > self.generation.number

    @property
    def next_generation(self) -> int:
        return max(self.requested, self.generation.number) + 1


class Progress:
    def __init__(self, kafka_config: KafkaConfig, topic: str) -> None:
        self.kafka_config = kafka_config
        self.data_topic, self.topic = topic, progress_topic(topic)
        self.key = topic.encode()
        self.resync_key = self.key + RESYNC_SUFFIX
        # What record() writes besides the version: the producer's generation, table and
        # hashed columns.
        self.generation = Generation()
        self.identity: Identity | None = None
        self.hashed: tuple[str, ...] = ()

    def record(self, version: int | None, part: Part | None = None) -> tuple[bytes, bytes]:
        """The progress record saying version is fully published (None: none yet), and part
        of the next one if `part`, as (value, key): the producer queues it in the
        transaction that publishes them."""
        named = self.identity.fields() if self.identity is not None else {}
        value = {"version": version, **self.generation.fields(), **named}
        value["hashed"] = sorted(self.hashed)
        return json.dumps(value | (part.fields() if part else {})).encode(), self.key

    def request_resync(self, producer: Any, generation: int) -> None:
        """Queue a resync request (no transaction needed: it is one record of its own)."""
        producer.produce(
            self.topic, json.dumps({"generation": generation}).encode(), self.resync_key
        )

    def last_version(self) -> int | None:
        return self.read().version

    def read(self) -> Position:
        """Read the topic to its end with read_committed; the last record of a key wins."""
        with self._reader(f"reading {self.topic}") as consumer:
            return self._read(consumer)

    def generation_here(self, number: int) -> Generation:
        """Generation `number`, starting at the data topic's end offsets now. Called by the
        only producer of the topic once it has fenced the older ones (whose open
        transactions are then aborted): every offset from here on is the new generation's."""
        with self._reader(f"reading the end offsets of {self.data_topic}") as consumer:
            topics = consumer.list_topics(self.data_topic, timeout=10).topics
            partitions = sorted(topics[self.data_topic].partitions)
            ends = {
                p: consumer.get_watermark_offsets(TopicPartition(self.data_topic, p), timeout=10)[1]
                for p in partitions
            }
        return Generation(number, ends)

    @contextmanager
    def _reader(self, doing: str) -> Iterator[Any]:
        consumer = Consumer(
            {
                **self.kafka_config,
                "group.id": "cdfbridge-progress-reader",  # assign() only: never joins or commits
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                # The end is signalled, not compared with the high watermark: the last
                # offsets of a transactional topic are commit markers no poll returns.
                "enable.partition.eof": True,
                # At the end, the broker answers at once instead of waiting 500 ms for more.
                "fetch.wait.max.ms": 10,
            }
        )
        where = str(self.kafka_config.get("bootstrap.servers", "?"))
        try:
            yield consumer
        except KafkaException as exc:
            raise client_failure(error_of(exc), where, doing) from exc
        finally:
            consumer.close()

    def _read(self, consumer: Any) -> Position:
        if not consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions:
            return Position()  # never published anything
        consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        last, requested = Position(), 0
        deadline = time.monotonic() + READ_TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return replace(last, requested=requested)
                raise KafkaException(error)
            record = json.loads(message.value() or b"{}")
            if message.key() == self.key:
                version = record["version"]
                last = Position(
                    None if version is None else int(version),
                    Generation.of(record),
                    identity=Identity.of(record),
                    part=Part.of(record),
                    hashed=tuple(record["hashed"]) if "hashed" in record else None,
                )
            elif message.key() == self.resync_key:
                requested = int(record["generation"])
        took = f"reading progress took over {READ_TIMEOUT_S:.0f} s"
        raise UnreachableError("Kafka", self.topic, 1, took)
