"""Tables start a few at a time (producer/lake/pacing.py Starts): a table gives its turn back at its
first read, or once it finds nothing to read. With one turn, a table that has published
everything already must not keep the others from starting."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from producer.lake import lake as lake_module
from producer.run import run
from services.progress_topic import Progress
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_many_tables import (
    _run_into,
    lake,
    producer_settings,
    published_once,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _publish(
    endpoints: Endpoints, entries: list[dict[str, Any]], spark: Any, topics: list[str]
) -> None:
    """Run a producer of `entries` until every one of `topics` has published."""
    stop, raised = threading.Event(), list[BaseException]()
    producer = threading.Thread(target=_run_into, args=(endpoints, entries, spark, stop, raised))
    producer.start()
    deadline = time.monotonic() + 120
    try:
        while not all(_published(endpoints, t) for t in topics):
            assert time.monotonic() < deadline, f"not every table of {topics} published in time"
            assert not raised, raised
            time.sleep(0.5)
    finally:
        stop.set()
        producer.join(60)
    assert raised == []


def _published(endpoints: Endpoints, topic: str) -> bool:
    try:
        return sum(published_once(endpoints, topic).values()) > 0
    except ValueError:  # nothing published yet: max() of no changes
        return False


def _starts(records: list[logging.LogRecord]) -> list[str]:
    """The topics in the order their tables started (the `start` event of each)."""
    events = [json.loads(r.getMessage()) for r in records if r.getMessage().startswith("{")]
    return [e["topic"] for e in events if e.get("event") == "start"]


def test_a_table_with_nothing_to_read_gives_its_turn_back(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(lake_module, "starting_at_once", lambda heap, chunk: 1)
    tables = lake(tmp_path, "ab", rows=20)
    topics = {name: unique(f"turn_{name}") for name in tables}
    entry = {
        name: {"table": tables[name][0], "primary_key": "id", "topic": topics[name]}
        for name in tables
    }
    _publish(endpoints, [entry["a"]], spark, [topics["a"]])  # a is at its head from now on
    caplog.clear()
    caplog.set_level(logging.INFO, logger="cdfbridge.producer")

    # One turn, taken by a first (turns go in the tables' order): a has nothing to
    # read, and b starts only once a gives its turn back.
    _publish(endpoints, [entry["a"], entry["b"]], spark, [topics["b"]])

    assert _starts(caplog.records) == [topics["a"], topics["b"]]


def _reads(reader: str) -> float:
    found = REGISTRY.get_sample_value("cdfbridge_producer_change_reads_total", {"reader": reader})
    return found or 0.0


def test_a_table_created_with_no_row_publishes_its_first_version_without_a_read(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    """Its CREATE commit adds no file: read as no change, not by Delta's reader (whose
    snapshots and job wait for any Spark job running, holding the table's turn)."""
    empty, filled = str(tmp_path / "empty"), str(tmp_path / "filled")
    for path in (empty, filled):
        spark.sql(
            f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING) USING delta "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
        )
    spark.sql(f"INSERT INTO delta.`{filled}` VALUES (1, 'a'), (2, 'b')")
    topics = {path: unique("created") for path in (empty, filled)}
    entries = [
        {"table": path, "primary_key": "id", "topic": topics[path], "until_version": last}
        for path, last in ((empty, 0), (filled, 1))
    ]
    delta_reads = _reads("delta")

    run(producer_settings(endpoints, entries), spark=spark)

    for path, last in ((empty, 0), (filled, 1)):
        assert Progress({"bootstrap.servers": endpoints.kafka}, topics[path]).last_version() == last
    assert len(published_once(endpoints, topics[filled])) == 2
    assert _reads("delta") == delta_reads  # both from the commits' files, the empty one unread
