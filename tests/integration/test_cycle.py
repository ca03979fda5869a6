"""Tables at their heads share one Spark job per cycle: each still publishes exactly once in
transactions of its own, a read that fails inside a cycle fails its table alone, and a table
moves between the cycle and reads of its own with no gap and no duplicate."""

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from consumer.group.loop import Pipeline
from producer.read.source import DeltaSource
from services.progress_topic import Progress
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_many_tables import (
    _failures,
    _run_into,
    _wait_for,
    changes_of,
    lake,
    published_once,
)
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def cycles() -> tuple[float, float]:
    """(cycles so far, those of one table)."""
    count = REGISTRY.get_sample_value("cdfbridge_producer_cycle_tables_count") or 0.0
    alone = REGISTRY.get_sample_value("cdfbridge_producer_cycle_tables_bucket", {"le": "1.0"})
    return count, alone or 0.0


def file_reads() -> float:
    """Reads served from the commits' own files (producer/read/file_read.py) so far."""
    found = REGISTRY.get_sample_value("cdfbridge_producer_change_reads_total", {"reader": "files"})
    return found or 0.0


def following(endpoints: Endpoints, entries: list[dict[str, Any]], spark: Any) -> Any:
    """The producer following entries in a thread: (stop, thread, raised)."""
    stop, raised = threading.Event(), list[BaseException]()
    thread = threading.Thread(target=_run_into, args=(endpoints, entries, spark, stop, raised))
    thread.start()
    return stop, thread, raised


def published(endpoints: Endpoints, topic: str, version: int) -> bool:
    return Progress({"bootstrap.servers": endpoints.kafka}, topic).last_version() == version


@dataclass
class Followed:
    """Tables followed by the producer in a thread (producer/run.py), each at its head."""

    tables: dict[str, tuple[str, int]]  # name: (path, last version)
    topics: dict[str, str]
    thread: threading.Thread
    raised: list[BaseException]


@contextmanager
def at_their_heads(
    spark: Any, endpoints: Endpoints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Followed]:
    """Three tables of one shape followed until the block ends, each published to its head
    when it begins; a cycle then waits long enough to take their next reads together."""
    monkeypatch.setattr("producer.read.cycle.GATHER_S", 20.0)
    monkeypatch.setattr("producer.read.cycle.QUIET_S", 10.0)
    tables = lake(tmp_path, "abc", rows=20)
    topics = {name: unique(f"cycle_{name}") for name in tables}
    entries = [
        {"table": p, "primary_key": "id", "topic": topics[n]} for n, (p, _) in tables.items()
    ]
    stop, thread, raised = following(endpoints, entries, spark)
    try:
        for name, (_, head) in tables.items():
            _wait_for(lambda t=topics[name], v=head: published(endpoints, t, v), name)
        yield Followed(tables, topics, thread, raised)
    finally:
        stop.set()
        thread.join(60)


def test_tables_at_their_heads_share_cycles_and_each_ends_equal_with_a_schema_change(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    tables = lake(tmp_path, "abcd", rows=30)
    topics = {name: unique(f"cycle_{name}") for name in tables}
    entries = [
        {"table": p, "primary_key": "id", "topic": topics[n]} for n, (p, _) in tables.items()
    ]
    before, read_before = cycles(), file_reads()
    stop, thread, raised = following(endpoints, entries, spark)
    try:
        for name, (_, head) in tables.items():
            _wait_for(
                lambda t=topics[name], v=head: published(endpoints, t, v), f"{name} at its head"
            )
        last = {}
        for round_ in range(3):  # every table commits every way, at once, while followed
            for seed, (name, (path, _)) in enumerate(tables.items()):
                operation = ("update", "merge", "delete")[round_]
                last[name] = Generator(path, seed=seed + 10 * round_).commit(operation, 10)
        path_d = tables["d"][0]
        spark.sql(f"ALTER TABLE delta.`{path_d}` ADD COLUMNS (note STRING)")
        spark.sql(f"INSERT INTO delta.`{path_d}` VALUES ('n1', 'x', 1, current_timestamp(), 'new')")
        last["d"] = int(spark.sql(f"DESCRIBE HISTORY delta.`{path_d}` LIMIT 1").first()[0])
        for name in tables:
            _wait_for(lambda t=topics[name], v=last[name]: published(endpoints, t, v), name)
    finally:
        stop.set()
        thread.join(60)
    assert raised == []
    count, alone = (after - was for after, was in zip(cycles(), before, strict=True))
    assert count > alone, "no cycle collected more than one table's read"
    assert file_reads() > read_before, "no read came from the commits' own files"
    for name, (path, _) in tables.items():
        assert len(published_once(endpoints, topics[name])) == changes_of(path, last[name])
        into = consumer_settings(
            endpoints, topics[name], ch_database, table=name, group=unique("g")
        )
        Pipeline(into, until_caught_up=True).run()
        report = verify(
            VerifySettings(
                kafka={"bootstrap_servers": endpoints.kafka},
                clickhouse={"url": endpoints.clickhouse, "database": ch_database},
                verify={"table": path, "topic": topics[name], "clickhouse_table": name},
            )
        )
        assert report.equal, report.render()


def test_a_read_that_fails_inside_a_cycle_fails_its_table_alone(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, logger="cdfbridge")
    with at_their_heads(spark, endpoints, tmp_path, monkeypatch) as followed:
        tables, topics = followed.tables, followed.topics
        last = {}
        for seed, (name, (path, _)) in enumerate(tables.items()):
            if name == "b":  # its read fails in the cycle's Spark job
                broken = Generator(path, seed=5).commit("insert", 20)
                _spoil_data_files_of(path, broken)
            else:
                last[name] = Generator(path, seed=seed + 10).commit("update", 10)
        _wait_for(lambda: _failures(topics["b"]) >= 1, "table b to fail")
        for name, version in last.items():
            _wait_for(lambda t=topics[name], v=version: published(endpoints, t, v), name)
        assert followed.thread.is_alive()
    assert followed.raised == []
    for name, version in last.items():
        assert len(published_once(endpoints, topics[name])) == changes_of(tables[name][0], version)
    assert not published(endpoints, topics["b"], broken)
    events = [r.getMessage() for r in caplog.records]
    assert any('"cycle_failed"' in e for e in events), "the failing read was never in a cycle"


def test_reads_in_one_scan_are_never_built_each_and_give_every_change_once(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Tables of one shape at their heads commit at once; the cycle takes their three reads
    # together, which share one scan: none builds a read of its own.
    built: list[tuple[str, str, int]] = []  # (how, table, first version) of each read built
    for how in ("changes", "read_planned"):
        original = getattr(DeltaSource, how)

        def counted(
            source: DeltaSource, first: int, *more: Any, how: str = how, f: Any = original
        ) -> Any:
            built.append((how, source.table, first))
            return f(source, first, *more)

        monkeypatch.setattr(DeltaSource, how, counted)
    caplog.set_level(logging.DEBUG, logger="cdfbridge")
    with at_their_heads(spark, endpoints, tmp_path, monkeypatch) as followed:
        tables, topics = followed.tables, followed.topics
        built.clear()
        caplog.clear()
        last = {
            name: Generator(path, seed=seed + 10).commit("update", 10)
            for seed, (name, (path, _)) in enumerate(tables.items())
        }
        for name, version in last.items():
            _wait_for(lambda t=topics[name], v=version: published(endpoints, t, v), name)
    assert followed.raised == []
    scans = [json.loads(m[m.index("{") :]) for m in caplog.messages if '"cycle_scans"' in m]
    assert {"shared": 1, "alone": 0} in [{k: s[k] for k in ("shared", "alone")} for s in scans]
    assert built == [], "a read in the shared scan was built on its own"
    for name, version in last.items():
        assert len(published_once(endpoints, topics[name])) == changes_of(tables[name][0], version)


def test_a_table_moves_from_the_cycle_to_a_backlog_and_back_without_gap_or_duplicate(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("producer.read.chunks.HEAD_ROWS", 200)  # a span of more is a backlog
    tables = lake(tmp_path, "ab", rows=20)
    topics = {name: unique(f"cycle_{name}") for name in tables}
    entries = [
        {"table": p, "primary_key": "id", "topic": topics[n]} for n, (p, _) in tables.items()
    ]
    path, _ = tables["a"]
    caplog.set_level(logging.INFO, logger="cdfbridge")
    stop, thread, raised = following(endpoints, entries, spark)
    try:
        for name, (_, head) in tables.items():
            _wait_for(lambda t=topics[name], v=head: published(endpoints, t, v), name)
        generator = Generator(path, seed=7)
        big = generator.commit("insert", 500)
        _wait_for(lambda: published(endpoints, topics["a"], big), "the big commit")
        last = generator.commit("update", 10)
        _wait_for(lambda: published(endpoints, topics["a"], last), "the commit after it")
    finally:
        stop.set()
        thread.join(60)
    assert raised == []
    assert len(published_once(endpoints, topics["a"])) == changes_of(path, last)
    moves = [
        json.loads(m[m.index("{") :])["path"]
        for m in (r.getMessage() for r in caplog.records)
        if '"table_path"' in m and path in m
    ]
    assert moves == ["head", "backlog", "head"]


def _spoil_data_files_of(path: str, version: int) -> None:
    """The files version added hold no Parquet: a read of them plans (the files are there,
    whichever reader takes them) and fails in its Spark job. A missing file would fail the
    commit-file reader's planning instead, before the read reaches the cycle."""
    log = Path(path) / "_delta_log" / f"{version:020d}.json"
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            (Path(path) / action["add"]["path"]).write_bytes(b"not a Parquet file")
