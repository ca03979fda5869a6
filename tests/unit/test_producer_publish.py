"""The producer's send loop when librdkafka's local queue is full (BufferError)."""

from typing import Any

import pyarrow as pa

from producer.publish import Publisher


class QueueFullOnCall:
    """Stands in for the librdkafka handle only to raise BufferError on the nth produce,
    as a full local queue does; records every message it accepted."""

    def __init__(self, full_on: int) -> None:
        self.full_on, self.calls = full_on, 0
        self.sent: list[tuple[Any, Any]] = []

    def produce(self, topic: str, value: bytes | None, key: bytes) -> None:
        self.calls += 1
        if self.calls == self.full_on:
            raise BufferError("Local: Queue full")
        self.sent.append((key, value))

    def poll(self, timeout: float) -> int:
        return 0


def publisher_with(handle: QueueFullOnCall) -> Publisher:
    publisher = Publisher({"bootstrap.servers": "127.0.0.1:1"}, "t", tombstones=True)
    publisher._producer = handle  # type: ignore[assignment]
    return publisher


def batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {"key": [b"k1", b"k2"], "value": [b"v1", b"deleted"], "_is_delete": [False, True]}
    )


def test_a_full_queue_on_the_tombstone_retries_the_tombstone_alone() -> None:
    handle = QueueFullOnCall(full_on=3)  # k1's value, k2's value, then k2's tombstone

    assert publisher_with(handle)._send(batch()) == 2

    assert handle.sent == [(b"k1", b"v1"), (b"k2", b"deleted"), (b"k2", None)]


def test_a_full_queue_on_a_value_retries_that_value_once() -> None:
    handle = QueueFullOnCall(full_on=2)

    publisher_with(handle)._send(batch())

    assert handle.sent == [(b"k1", b"v1"), (b"k2", b"deleted"), (b"k2", None)]
