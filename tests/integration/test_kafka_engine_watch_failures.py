"""`kafka-engine-ddl --watch` outlives an outage: a topic pattern whose Kafka cannot be
reached is looked for again each round (not an exit), and a ClickHouse taken away fails
each apply, counted and named by /health, until it is back and the DDL is applied."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from consumer import topics
from consumer.kafka_engine.watch import TOPICS, EngineWatch
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.forwarder import Forwarder
from tests.integration.test_many_tables import _wait_for
from tests.producer_helpers import append, create_table, publish

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def watching() -> Iterator[list[EngineWatch]]:
    """Watches started with `_started`, stopped at the end."""
    started: list[EngineWatch] = []
    yield started
    for engine in started:
        engine.stop.set()


def _started(engine: EngineWatch, started: list[EngineWatch]) -> threading.Thread:
    started.append(engine)
    thread = threading.Thread(target=engine.run, daemon=True)
    thread.start()
    return thread


def _failed(engine: EngineWatch, topic: str) -> float:
    found = engine.registry.get_sample_value(
        "cdfbridge_consumer_kafka_engine_apply_failures_total", {"topic": topic}
    )
    return found or 0.0


def test_a_pattern_whose_kafka_cannot_be_reached_is_looked_for_again(
    endpoints: Endpoints,
    ch_database: str,
    watching: list[EngineWatch],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(topics, "TIMEOUT_S", 2)  # each look gives up sooner than 30 s
    settings = consumer_settings(
        endpoints, "", ch_database, topic_pattern="cdc_.*", kafka_engine_watch_seconds=0.2
    )
    nowhere = settings.model_copy(
        update={"kafka": settings.kafka.model_copy(update={"bootstrap_servers": "127.0.0.1:9"})}
    )
    engine = EngineWatch(nowhere, "g", 1)
    thread = _started(engine, watching)
    _wait_for(lambda: _failed(engine, TOPICS) >= 2, "two looks for the topics failing", 120)
    assert thread.is_alive()
    assert [p.split(":")[0] for p in engine.problems()] == [f"topic {TOPICS}"]


def test_an_apply_fails_while_clickhouse_is_gone_and_passes_once_it_is_back(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    watching: list[EngineWatch],
) -> None:
    path = str(tmp_path / "t")
    create_table(spark, path)
    append(spark, path, [("1", "ann", 30)])
    topic = publish(spark, endpoints, path, "id", until_version=1)
    url = urlparse(endpoints.clickhouse)
    forwarder = Forwarder((url.hostname or "127.0.0.1", url.port or 8123))  # not started: gone
    settings = consumer_settings(endpoints, topic, ch_database, kafka_engine_watch_seconds=0.2)
    through = settings.clickhouse.model_copy(update={"url": forwarder.url})
    engine = EngineWatch(settings.model_copy(update={"clickhouse": through}), f"{topic}-g", 1)
    thread = _started(engine, watching)
    try:
        _wait_for(lambda: _failed(engine, topic) >= 2, "applies failing")
        assert thread.is_alive() and f"topic {topic}" in engine.problems()[0]
        forwarder.start()
        _wait_for(lambda: topic in engine.done and not engine.problems(), "the DDL applied")
    finally:
        forwarder.stop()
