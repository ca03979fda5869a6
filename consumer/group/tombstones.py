"""Tombstones that carry their delete.

With `tombstones = true` the producer follows each delete with a null value whose
`cdfbridge.delete` header holds the delete's own value message (schemas/README.md). The
log cleaner removes the delete record before its tombstone, so a reader that resumes behind
the cleaner finds the delete only there: every read of a batch takes it from the header,
and it is inserted like the delete it copies (a copy next to its delete is the same row
twice, which the ReplacingMergeTree folds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from confluent_kafka import Message

from schemas.naming import DELETE_HEADER

_VALUE = cast(Callable[[Message], bytes | None], Message.value)


def payload(message: Message) -> bytes | None:
    """The message's value; for a tombstone, the delete it carries, or None."""
    value = message.value()
    if value is not None:
        return value
    carried = dict(message.headers() or {}).get(DELETE_HEADER)
    return carried if isinstance(carried, bytes) else None


def payloads(messages: Sequence[Message]) -> list[bytes | None]:
    """Each message's payload, in order: values mapped in C, and only a run that holds a
    tombstone looked at one message at a time."""
    values = list(map(_VALUE, messages))
    if None not in values:
        return values
    return [payload(m) if v is None else v for v, m in zip(values, messages, strict=True)]
