"""No failure ends a watch: ClickHouse taken away and brought back, a target table dropped,
a topic deleted and a Kafka that cannot be reached each fail the rounds of the tables they
touch, logged with the table, counted in cdfbridge_verify_failures_total and named by
/health, while the watch goes on with the others and resumes once the cause is gone."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from schemas.naming import progress_topic
from tests.endpoints import Endpoints
from tests.integration.forwarder import Forwarder
from tests.integration.test_many_tables import _wait_for
from tests.integration.test_verify_asof import consumed, people
from verify.asof_check import prepare
from verify.rounds import watched
from verify.watch import Watch

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def forwarder(endpoints: Endpoints) -> Iterator[Forwarder]:
    url = urlparse(endpoints.clickhouse)
    found = Forwarder((url.hostname or "127.0.0.1", url.port or 8123))
    found.start()
    yield found
    found.stop()


def test_a_watch_outlives_every_failure_and_resumes(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    kafka_admin: Any,
    forwarder: Forwarder,
) -> None:
    settings = {}
    for name in ("a", "b", "c"):
        path, topic = people(spark, endpoints, tmp_path / name)
        found = consumed(endpoints, topic, ch_database, table=path)
        settings[name] = _through(found, forwarder.url)
    nowhere = settings["c"].kafka.model_copy(update={"bootstrap_servers": "127.0.0.1:9"})
    unreachable = settings["c"].model_copy(update={"kafka": nowhere})  # no Kafka answers there
    watch = Watch(settings["a"])
    watch.tables = [*watched(settings["a"]), *watched(settings["b"])]
    a, b = (w.name for w in watch.tables)
    watcher = threading.Thread(target=watch.run)
    watcher.start()
    try:
        rounds, failures = _counter(watch, "rounds"), _counter(watch, "failures")
        _wait_for(lambda: rounds(a) >= 1 and rounds(b) >= 1, "a round of each table")

        forwarder.stop()  # ClickHouse is gone ...
        _wait_for(lambda: failures(a) >= 1 and failures(b) >= 1, "rounds failing")
        assert watcher.is_alive() and len(watch.metrics.problems()) == 2
        forwarder.start()  # ... and back
        _wait_for(lambda: watch.metrics.problems() == [], "rounds passing again")

        [c] = (w.name for w in watched(unreachable))
        watch.tables += watched(unreachable)
        _wait_for(lambda: failures(c) >= 1, "c failing while Kafka cannot be reached", 120)
        passed = rounds(a)
        _wait_for(lambda: rounds(a) >= passed + 1, "a's rounds going on")
        watch.tables = watch.tables[:2]

        clickhouse.command(f"DROP TABLE {prepare(settings['b'], clickhouse).target.name} SYNC")
        before = failures(b)
        _wait_for(lambda: failures(b) >= before + 2, "b failing, round after round")
        passed = rounds(a)
        _wait_for(lambda: rounds(a) >= passed + 2, "a's rounds going on")
        assert sorted(p.split(":")[0] for p in watch.metrics.problems()) == sorted([b, c])

        topic = settings["a"].verify.topic_name
        for future in kafka_admin.delete_topics([topic, progress_topic(topic)]).values():
            future.result()
        before_a = failures(a)
        _wait_for(lambda: failures(a) >= before_a + 2, "a failing once its topic is gone", 120)
        assert watcher.is_alive()
    finally:
        watch.stop.set()
        watcher.join(60)
    assert not watcher.is_alive()


def _through(found: Any, url: str) -> Any:
    """found's settings with ClickHouse reached at url, a round every 0.2 s."""
    clickhouse = found.clickhouse.model_copy(update={"url": url})
    verify = found.verify.model_copy(update={"interval_seconds": 0.2})
    return found.model_copy(update={"clickhouse": clickhouse, "verify": verify})


def _counter(watch: Watch, name: str) -> Callable[[str], float]:
    def value(table: str) -> float:
        sample = f"cdfbridge_verify_{name}_total"
        found = watch.metrics.registry.get_sample_value(sample, {"table": table})
        return found or 0.0

    return value
