"""The transactor's send loop when librdkafka's local queue is full (BufferError), and its
start: init_transactions retried while Kafka does not answer, never when it refuses."""

from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException

from producer.errors import FencedError
from producer.publish.handed import Chunk
from producer.publish.sends import send
from producer.publish.transactor import Transactor
from services.service_errors import KafkaRefusedError, UnreachableError


class QueueFullOnCall:
    """Stands in for the librdkafka handle only to raise BufferError on the nth produce,
    as a full local queue does; records every message it accepted."""

    def __init__(self, full_on: int) -> None:
        self.full_on, self.calls = full_on, 0
        self.sent: list[tuple[Any, Any]] = []
        self.headers: list[Any] = []

    def produce(
        self, topic: str, value: bytes | None, key: bytes, partition: int = -1, headers: Any = None
    ) -> None:
        self.calls += 1
        if self.calls == self.full_on:
            raise BufferError("Local: Queue full")
        self.sent.append((key, value))
        self.headers.append(headers)

    def poll(self, timeout: float) -> int:
        return 0


def sent_by(handle: QueueFullOnCall) -> int:
    chunk = Chunk("t", [batch()], ("t.progress", b"{}", b"t"), tombstones=True)
    return send(handle, chunk)  # type: ignore[arg-type]


def batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {"key": [b"k1", b"k2"], "value": [b"v1", b"deleted"], "_is_delete": [False, True]}
    )


def test_a_full_queue_on_the_tombstone_retries_the_tombstone_alone() -> None:
    handle = QueueFullOnCall(full_on=3)  # k1's value, k2's value, then k2's tombstone

    assert sent_by(handle) == 2

    assert handle.sent == [(b"k1", b"v1"), (b"k2", b"deleted"), (b"k2", None)]


def test_a_tombstone_carries_its_delete_in_a_header() -> None:
    handle = QueueFullOnCall(full_on=0)

    sent_by(handle)

    assert handle.headers == [None, None, {"cdfbridge.delete": b"deleted"}]


def test_a_full_queue_on_a_value_retries_that_value_once() -> None:
    handle = QueueFullOnCall(full_on=2)

    sent_by(handle)

    assert handle.sent == [(b"k1", b"v1"), (b"k2", b"deleted"), (b"k2", None)]


class InitTransactions:
    """Stands in for the librdkafka handle's init_transactions: raises the given errors in
    turn, then succeeds."""

    def __init__(self, *errors: KafkaError) -> None:
        self.errors, self.calls = list(errors), 0

    def init_transactions(self, timeout: float) -> None:
        self.calls += 1
        if self.errors:
            raise KafkaException(self.errors.pop(0))


def started(handle: InitTransactions) -> Transactor:
    transactor = Transactor({"bootstrap.servers": "127.0.0.1:1"}, "cdfbridge-orders")
    transactor._producer = handle  # type: ignore[assignment]
    return transactor


def test_kafka_timing_out_on_init_transactions_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("producer.publish.transactor.START_ATTEMPTS", 2)
    handle = InitTransactions(KafkaError(KafkaError._TIMED_OUT, retriable=True))

    started(handle).start()

    assert handle.calls == 2


def test_kafka_timing_out_on_every_attempt_is_named_with_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("producer.publish.transactor.START_ATTEMPTS", 2)
    timeout = KafkaError(KafkaError._TIMED_OUT, "no broker", retriable=True)
    handle = InitTransactions(timeout, timeout, timeout)

    with pytest.raises(UnreachableError, match=r"Kafka at 127\.0\.0\.1:1 did not answer after 2 "):
        started(handle).start()
    assert handle.calls == 2


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        (KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), KafkaRefusedError),
        (KafkaError(KafkaError._FENCED, fatal=True), FencedError),
    ],
)
def test_a_refusal_on_init_transactions_is_not_retried(
    error: KafkaError, raised: type[Exception]
) -> None:
    handle = InitTransactions(error)

    with pytest.raises(raised):
        started(handle).start()
    assert handle.calls == 1
