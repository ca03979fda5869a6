"""Back-pressure after a transient failure: pause, back off by the project's retry
schedule, resume; a written batch starts the schedule again. The consumer is a real
confluent_kafka.Consumer that never connects (no partitions assigned)."""

import logging
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer

from consumer.group.backpressure import Backpressure
from consumer.group.metrics import RETRIES, Metrics
from services.clickhouse_errors import ClickHouseUnavailableError

DOWN = ClickHouseUnavailableError("ClickHouse is unavailable")


@pytest.fixture
def consumer() -> Iterator[Consumer]:
    unconnected = Consumer({"group.id": "backpressure", "bootstrap.servers": ""})
    yield unconnected
    unconnected.close()


def test_delays_follow_the_retry_schedule_up_to_the_ceiling_and_restart_after_a_write(
    consumer: Consumer,
) -> None:
    backpressure = Backpressure(consumer, "t", max_backoff_s=3, metrics=Metrics())

    delays = [backpressure.back_off(DOWN, []) for _ in range(5)]
    backpressure.recovered()

    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backpressure.back_off(DOWN, []) == 0.5


def test_partitions_wait_out_the_delay_then_resume(consumer: Consumer) -> None:
    backpressure = Backpressure(consumer, "t", max_backoff_s=0.2, metrics=Metrics())
    assert not backpressure.waiting()

    delay = backpressure.back_off(DOWN, [])
    assert backpressure.waiting()
    time.sleep(delay)

    assert not backpressure.waiting()  # resumed
    assert not backpressure.waiting()


def test_each_back_off_is_counted_and_logged_with_its_cause(
    consumer: Consumer, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    backpressure = Backpressure(consumer, "t", max_backoff_s=30, metrics=metrics)

    with caplog.at_level(logging.WARNING):
        backpressure.back_off(DOWN, [])
        backpressure.back_off(DOWN, [])

    assert metrics.total(RETRIES) == 2
    [first, _] = [r for r in caplog.records if r.getMessage() == "transient error, retrying"]
    assert first.__dict__["retry_in_s"] == 0.5
    assert "ClickHouse is unavailable" in first.__dict__["error"]


def test_a_topic_held_while_its_writes_catch_up_resumes_only_once_no_back_off_waits(
    consumer: Consumer,
) -> None:
    backpressure = Backpressure(consumer, "t", max_backoff_s=0.2, metrics=Metrics())
    assert backpressure.still

    backpressure.hold(True)  # more batches wait for ClickHouse than may
    assert not backpressure.still
    delay = backpressure.back_off(DOWN, [])
    backpressure.hold(False)  # the failure dropped them: fits again, but backs off first
    assert not backpressure.still and backpressure.waiting()

    time.sleep(delay)
    assert not backpressure.waiting()
    assert backpressure.still
