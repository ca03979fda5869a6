"""The progress record: the last Delta version fully published, and the topic's generation.

A compacted topic `<topic>.progress` holds one record per data topic, keyed by the topic's
name; the producer writes it inside the transaction of the chunk it describes, so it is
visible exactly when the chunk is. The producer reads it to resume, cdfbridge-verify to know
which version to compare, and a rebuild to know where the topic's current generation starts.
This module is the record's format; services/progress_topic.py reads and writes the topic.

A generation is one unbroken history of the table in the topic: a snapshot, then its Change
Data Feed. `cdfbridge-producer resync` asks for a new one with a record of its own key
(`<topic>#resync`); the producer that follows the topic then snapshots the table at its
latest version and records the offsets the new generation starts at, so a consumer can
rebuild from there and leave every older row behind.

Each record names its owner, the producer that wrote it; a producer about to follow the
topic claims it with a record of another key (`<topic>#claim`) naming itself
(producer/publish/takeover.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

RESYNC_SUFFIX = b"#resync"  # a character no topic name has
# The topic_id of a record saying its data topic lost the history it counts: no Kafka topic
# id (22 characters of base64) is this.
LOST_TOPIC_ID = "lost"
CLAIM_SUFFIX = b"#claim"  # a producer's claim on the topic, before it publishes


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
    # The registry id of the value schema the generation publishes with: what the producer
    # compares the table with on a restart, and what consumers build tables from. A
    # registry may answer a schema it already holds with its old id and no new version
    # (Confluent Schema Registry), leaving the subject's "latest" at another schema. None
    # when the record predates it: the subject's latest then.
    value_schema: int | None = None
    # The transactional.id of the producer that wrote the record (its process's: one for
    # many tables); None when the record predates it: `cdfbridge-<topic>` wrote it then.
    # A producer taking the table over fences it first (producer/publish/takeover.py).
    owner: str | None = None
    # The data topic's Kafka id when the record was written: a topic deleted and created
    # again has another, and lacks the history the record speaks of. None when the record
    # predates it.
    topic_id: str | None = None

    @property
    def resync_pending(self) -> bool:
        return self.requested > self.generation.number

    @property
    def next_generation(self) -> int:
        return max(self.requested, self.generation.number) + 1


def record_key(topic: str) -> bytes:
    """The key of the data topic's progress record."""
    return topic.encode()


def resync_key(topic: str) -> bytes:
    """The key of the data topic's resync requests."""
    return record_key(topic) + RESYNC_SUFFIX


def claim_key(topic: str) -> bytes:
    """The key of the claims producers make on the data topic (producer/publish/takeover.py)."""
    return record_key(topic) + CLAIM_SUFFIX


def encode_claim(owner: str) -> bytes:
    return json.dumps({"owner": owner}).encode()


def decode_claim(value: bytes | None) -> str:
    return str(json.loads(value or b"{}")["owner"])


def encode(
    version: int | None,
    generation: Generation,
    identity: Identity | None,
    hashed: Iterable[str],
    part: Part | None = None,
    value_schema: int | None = None,
    owner: str | None = None,
    topic_id: str | None = None,
) -> bytes:
    """The progress record saying version is fully published (None: none yet), and part of
    the next one if `part`."""
    named = identity.fields() if identity is not None else {}
    value = {"version": version, **generation.fields(), **named, "hashed": sorted(hashed)}
    optional = {"value_schema": value_schema, "owner": owner, "topic_id": topic_id}
    given = {key: found for key, found in optional.items() if found is not None}
    return json.dumps(value | given | (part.fields() if part else {})).encode()


def decode(value: bytes | None) -> Position:
    """What a progress record says (`requested` stays 0: resync requests have their own key)."""
    record = json.loads(value or b"{}")
    version = record["version"]
    return Position(
        None if version is None else int(version),
        Generation.of(record),
        identity=Identity.of(record),
        part=Part.of(record),
        hashed=tuple(record["hashed"]) if "hashed" in record else None,
        value_schema=record.get("value_schema"),
        owner=record.get("owner"),
        topic_id=record.get("topic_id"),
    )


def encode_resync(generation: int) -> bytes:
    """A request for generation `generation`."""
    return json.dumps({"generation": generation}).encode()


def decode_resync(value: bytes | None) -> int:
    """The generation a resync request asks for."""
    return int(json.loads(value or b"{}")["generation"])
