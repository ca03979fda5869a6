"""A rebalance callback that fails, on a real Kafka: what comes out of consume() is an
exception the consumer's handlers catch, never the bare KafkaError confluent-kafka raises
again when its own C code raised inside the callback (consumer/group/rebalance.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from consumer.group import kafka
from consumer.group.rebalance import Rebalance, _caught
from schemas.errors import ServiceUnavailableError
from services.kafka_errors import error_of
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration


def _consume_until_raised(consumer: Consumer) -> BaseException | None:
    """What consume() raised within 30 s; None if it raised nothing. A non-exception
    coming out is caught by the bare except and fails the test."""
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            consumer.consume(10, timeout=0.2)
    except BaseException as exc:  # noqa: BLE001 - what came out is the subject
        return exc
    except:  # noqa: E722 - a bare KafkaError is no BaseException
        pytest.fail("consume() raised something that is not an exception")
    return None


def _member(endpoints: Endpoints, topic: str, rebalance: Rebalance) -> Consumer:
    config = kafka.consumer_config({"bootstrap.servers": endpoints.kafka}, unique("group"))
    consumer = Consumer(config)
    consumer.subscribe([topic], on_assign=rebalance.on_assign, on_revoke=rebalance.on_revoke)
    return consumer


def test_committed_offsets_that_time_out_come_out_of_consume_as_a_transient_error(
    endpoints: Endpoints,
    topic_factory: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The group's committed offsets, looked up in on_assign, time out every time (a
    timeout no coordinator meets): after its attempts the member raises a
    ServiceUnavailableError out of consume(), which the consumer backs off on."""
    monkeypatch.setattr(kafka, "TIMEOUT_S", 1e-6)
    monkeypatch.setattr(kafka, "COMMITTED_ATTEMPTS", 2)
    rebalance = Rebalance()
    rebalance.owner = object()  # type: ignore[assignment] # not reached: the look-up fails
    consumer = _member(endpoints, topic_factory(1), rebalance)
    try:
        raised = _consume_until_raised(consumer)
    finally:
        rebalance.owner = None
        consumer.close()
    assert isinstance(raised, ServiceUnavailableError), raised
    assert "TIMED_OUT" in str(raised)


class _Raw(Rebalance):
    @_caught
    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.committed(partitions, timeout=1e-6)  # raised by the client's C code


def test_an_error_the_client_raises_inside_a_callback_comes_out_as_an_exception(
    endpoints: Endpoints, topic_factory: Callable[..., str]
) -> None:
    """The raw case, a callback whose client call fails with nothing of ours in between:
    without `_caught`, consume() raises a bare KafkaError past every `except`."""
    consumer = _member(endpoints, topic_factory(1), _Raw())
    try:
        raised = _consume_until_raised(consumer)
    finally:
        consumer.close()
    assert isinstance(raised, KafkaException), raised
    assert error_of(raised).code() == KafkaError._TIMED_OUT


def test_an_assignment_that_arrives_while_the_member_closes_starts_nothing(
    endpoints: Endpoints,
    topic_factory: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """During close(), librdkafka does not answer the committed-offsets look-up: each try
    waits out its timeout, and a consumer stopped by SIGTERM took minutes to exit. A closing
    member looks nothing up (here a look-up would fail at once) and hands its owner nothing
    (an `object()` here, which an assignment would fail on)."""
    monkeypatch.setattr(kafka, "TIMEOUT_S", 1e-6)
    monkeypatch.setattr(kafka, "COMMITTED_ATTEMPTS", 1)
    rebalance = Rebalance()
    rebalance.owner = object()  # type: ignore[assignment] # not reached while closing
    rebalance.closing = True
    consumer = _member(endpoints, topic_factory(1), rebalance)
    try:
        deadline = time.monotonic() + 30
        while not rebalance.joined and time.monotonic() < deadline:
            consumer.consume(10, timeout=0.2)  # a look-up would raise out of here
        assert rebalance.joined
    finally:
        rebalance.owner = None
        consumer.close()
