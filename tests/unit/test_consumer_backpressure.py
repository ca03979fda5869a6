"""Back-pressure after a transient failure: pause, back off by the project's retry
schedule, resume; a written batch starts the schedule again. The consumer is a real
confluent_kafka.Consumer that never connects (no partitions assigned)."""

import logging
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer

from consumer.backpressure import Backpressure
from consumer.metrics import RETRIES, Metrics
from schemas.clickhouse_errors import ClickHouseUnavailableError

DOWN = ClickHouseUnavailableError("ClickHouse is unavailable")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def consumer() -> Iterator[Consumer]:
    unconnected = Consumer({"group.id": "backpressure", "bootstrap.servers": ""})
    yield unconnected
    unconnected.close()


def test_delays_follow_the_retry_schedule_up_to_the_ceiling_and_restart_after_a_write(
    consumer: Consumer,
) -> None:
    backpressure = Backpressure(consumer, max_backoff_s=3, metrics=Metrics(), clock=Clock())

    delays = [backpressure.back_off(DOWN, []) for _ in range(5)]
    backpressure.recovered()

    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backpressure.back_off(DOWN, []) == 0.5


def test_partitions_wait_out_the_delay_then_resume(consumer: Consumer) -> None:
    clock = Clock()
    backpressure = Backpressure(consumer, max_backoff_s=30, metrics=Metrics(), clock=clock)
    assert not backpressure.waiting()

    backpressure.back_off(DOWN, [])
    clock.now += 0.4
    assert backpressure.waiting()
    clock.now += 0.1
    assert not backpressure.waiting()
    assert not backpressure.waiting()


def test_each_back_off_is_counted_and_logged_with_its_cause(
    consumer: Consumer, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    backpressure = Backpressure(consumer, max_backoff_s=30, metrics=metrics, clock=Clock())

    with caplog.at_level(logging.WARNING):
        backpressure.back_off(DOWN, [])
        backpressure.back_off(DOWN, [])

    assert metrics.total(RETRIES) == 2
    [first, _] = [r for r in caplog.records if r.getMessage() == "transient error, retrying"]
    assert first.__dict__["retry_in_s"] == 0.5
    assert "ClickHouse is unavailable" in first.__dict__["error"]
