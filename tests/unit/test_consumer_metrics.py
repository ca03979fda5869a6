"""The metrics of several topics on one registry: process totals unlabeled as with one topic,
per-topic families labeled, a failed topic on /metrics and /health, and the exit code of the
worst failure."""

import urllib.request
from collections.abc import Iterator
from urllib.error import HTTPError

import pytest
from confluent_kafka import KafkaError, KafkaException

from consumer.group.batch import PartitionBatch, Written
from consumer.group.errors import KafkaFatalError
from consumer.group.metrics import BUFFERED, FAILED, ROWS, Collectors, Metrics
from consumer.process import Failure, worst
from schemas.errors import ConfigError
from schemas.target import SchemaMismatchError
from services.clickhouse_errors import ClickHouseUnavailableError
from services.health import serve
from tests.conftest import free_port


def batch(topic: str, rows: int) -> PartitionBatch:
    return PartitionBatch(topic, 0, 10, 10 + rows - 1, [b"x"] * rows)


def test_two_topics_share_the_collectors_and_keep_their_own_counts() -> None:
    collectors = Collectors()
    orders, customers = Metrics("orders", collectors), Metrics("customers", collectors)

    orders.written(batch("orders", 3), Written(3, 0), 0.1, high=13)
    customers.written(batch("customers", 5), Written(4, 1), 0.1, high=20)
    orders.buffered(7)
    customers.buffered(2)

    sample = collectors.registry.get_sample_value
    assert (orders.total(ROWS), customers.total(ROWS)) == (3, 4)
    assert sample(f"{ROWS}_total") == 7
    assert sample(BUFFERED) == 9
    assert sample("cdfbridge_consumer_topic_buffered_rows", {"topic": "orders"}) == 7
    assert sample("cdfbridge_consumer_lag", {"topic": "customers", "partition": "0"}) == 5


@pytest.fixture
def endpoint() -> Iterator[tuple[Collectors, int]]:
    collectors, port = Collectors(), free_port()
    server = serve(collectors, port)
    yield collectors, port
    server.shutdown()


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:  # noqa: S310
            return answer.status, answer.read().decode()
    except HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_failed_topic_is_a_gauge_and_makes_health_name_it(
    endpoint: tuple[Collectors, int],
) -> None:
    collectors, port = endpoint
    Metrics("orders", collectors)
    customers = Metrics("customers", collectors)
    assert get(port, "/health") == (200, "ok\n")

    customers.failed(SchemaMismatchError("table customers does not match"))

    status, body = get(port, "/health")
    assert status == 503
    assert body == "topic customers stopped: SchemaMismatchError: table customers does not match\n"
    scraped = get(port, "/metrics")[1]
    assert f'{FAILED}{{topic="customers"}} 1.0' in scraped
    assert f'{FAILED}{{topic="orders"}} 0.0' in scraped


@pytest.mark.parametrize(
    ("errors", "code"),
    [
        ([], 0),
        ([ClickHouseUnavailableError("down")], 3),
        ([ClickHouseUnavailableError("down"), SchemaMismatchError("t")], 1),
        ([KafkaFatalError("fenced"), ConfigError("refused"), SchemaMismatchError("t")], 2),
        ([KafkaException(KafkaError(KafkaError._TRANSPORT))], 3),
        ([RuntimeError("a bug")], 1),
    ],
)
def test_the_exit_code_is_the_worst_failures(errors: list[BaseException], code: int) -> None:
    assert worst([Failure(f"t{i}", error) for i, error in enumerate(errors)]) == code
