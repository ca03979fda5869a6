"""Find the bad messages of a batch ClickHouse refused, so that only they go to the DLQ.

Runs only after an insert failed on its data, so per-message Python is fine here:
1. decode every value (a tombstone's carried delete) with fastavro: not Confluent-framed,
   an unknown schema id, or a body that does not decode → poison;
2. insert the rest; if ClickHouse still refuses, bisect: halves are inserted (each with its
   own dedup token) until the single messages that do not fit the table are found.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import fastavro
from confluent_kafka import Message

from consumer.group.registry import HEADER, Schemas, schema_id
from consumer.group.tombstones import payload
from services.clickhouse_errors import (
    REGISTRY_FETCH_CODES,
    BadDataError,
    ClickHouseUnavailableError,
)

Poison = tuple[Message, str]  # (message, why)
Insert = Callable[[Sequence[Message], str], None]  # (messages, dedup token)


def undecodable(
    messages: Sequence[Message], schemas: Schemas
) -> tuple[list[Message], list[Poison]]:
    """Split messages with a value into (decodable, poison) by decoding them with fastavro."""
    good: list[Message] = []
    poison: list[Poison] = []
    for message in messages:
        why = _why_undecodable(payload(message) or b"", schemas)
        if why is None:
            good.append(message)
        else:
            poison.append((message, why))
    return good, poison


def insert_isolating(messages: Sequence[Message], insert: Insert) -> list[Poison]:
    """Insert `messages`; returns those ClickHouse refuses one by one, with its reason."""
    if not messages:
        return []
    try:
        insert(messages, token(messages))
    except BadDataError as exc:
        if len(messages) == 1:
            if exc.code in REGISTRY_FETCH_CODES:
                # The value decodes with the registry's schema, so ClickHouse's fetch failed.
                raise ClickHouseUnavailableError(
                    f"ClickHouse cannot fetch the schema from the registry: {exc}"
                ) from exc
            return [(messages[0], f"value does not fit the table: {exc}")]
        half = len(messages) // 2
        return insert_isolating(messages[:half], insert) + insert_isolating(messages[half:], insert)
    return []


def token(messages: Sequence[Message]) -> str:
    first, last = messages[0], messages[-1]
    return f"{first.topic()}-{first.partition()}-{first.offset()}-{last.offset()}"


def _why_undecodable(value: bytes, schemas: Schemas) -> str | None:
    found = schema_id(value)
    if found is None:
        return "not in the Confluent wire format (no zero magic byte and schema id)"
    parsed = schemas.parsed(found)
    if parsed is None:
        return f"unknown schema id {found}: the registry does not have it"
    body = io.BytesIO(value[HEADER:])
    try:
        fastavro.schemaless_reader(body, parsed, None)
    except Exception as exc:  # noqa: BLE001 - fastavro raises many types on corrupt bodies
        return f"Avro body does not decode with schema id {found}: {exc!r}"
    if body.tell() != len(value) - HEADER:
        return f"Avro body has {len(value) - HEADER - body.tell()} trailing bytes"
    return None
