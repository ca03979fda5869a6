"""As-of comparisons against a real pipeline: drift made by hand in ClickHouse is found by
key and repaired, a repair loses to a newer change of its key, a table ClickHouse cannot
read exactly is staged, and an equal table under load stays at zero lost, extra and wrong
keys while moving keys come and go. (Kafka-engine and cluster tables:
test_verify_asof_engines.py.)"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from consumer.group.loop import Pipeline
from services.progress_topic import Progress
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_cycle import following, published
from tests.integration.test_many_tables import _wait_for, lake
from tests.producer_helpers import change_every_way, create_table, publish
from verify import lake_side
from verify.asof import BUCKETS, Scope
from verify.asof_check import prepare, run_round
from verify.cli import main
from verify.repair import repair
from verify.rounds import once
from verify.settings import VerifySettings
from verify.watch import Watch

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def consumed(endpoints: Endpoints, topic: str, database: str, **verify: Any) -> VerifySettings:
    """A new group fills `database` from topic until caught up; as-of settings for it."""
    group = unique("group")
    Pipeline(consumer_settings(endpoints, topic, database, group=group), until_caught_up=True).run()
    return as_of(endpoints, database, topic, group, **verify)


def as_of(
    endpoints: Endpoints, database: str, topic: str, group: str, **verify: Any
) -> VerifySettings:
    return VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"topic": topic, "group": group, "as_of": True, **verify},
    )


DRIFTED = ([{"id": "1"}], [{"id": "9"}], [{"id": "3"}])  # lost, extra, wrong, as tampered


def people(spark: Any, endpoints: Endpoints, root: Path) -> tuple[str, str]:
    """The people table, versions 0-4, published: (path, topic). Ids 1, 3, 4 survive."""
    path = str(root / "people")
    change_every_way(spark, path)
    return path, publish(spark, endpoints, path, "id", until_version=4)


def test_three_kinds_of_drift_are_found_by_key_and_repaired(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = people(spark, endpoints, tmp_path)
    settings = consumed(endpoints, topic, ch_database, table=path)
    [report] = once(settings)
    assert report.equal and report.version == 4, report.render()

    table = prepare(settings, clickhouse).target.name
    clickhouse.command(f"ALTER TABLE {table} DELETE WHERE id = '1' SETTINGS mutations_sync = 2")
    clickhouse.command(
        f"ALTER TABLE {table} UPDATE name = 'nobody' WHERE id = '3' SETTINGS mutations_sync = 2"
    )
    clickhouse.command(  # a key the table never had, at a version that was published
        f"INSERT INTO {table} (id, name, age, _change_type, _commit_version, _commit_timestamp) "
        "VALUES ('9', 'ghost', 1, 'insert', 3, now64())"
    )
    [report] = once(settings)
    assert (report.lost, report.extra, report.wrong) == (1, 1, 1), report.render()
    assert (report.lost_keys, report.extra_keys, report.wrong_keys) == DRIFTED

    consumer_env(monkeypatch, endpoints, ch_database)  # what the command line reads
    args = ["--table", path, "--topic", topic, "--group", settings.verify.group, "--repair"]
    assert main([*args, "--json"]) == 0, "repaired, then compared equal"
    view = prepare(settings, clickhouse).target.current_view
    rows = clickhouse.query(f"SELECT id, name, age FROM {view} ORDER BY id").result_rows
    assert [tuple(r) for r in rows] == [("1", "ann", 31), ("3", "cy", 51), ("4", "dee", 20)]


def test_a_repair_loses_to_a_newer_change_of_its_key_landing_before_or_after_it(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    path, topic = people(spark, endpoints, tmp_path)
    group = unique("group")
    into = consumer_settings(endpoints, topic, ch_database, group=group)
    Pipeline(into, until_caught_up=True).run()
    settings = as_of(endpoints, ch_database, topic, group, table=path)
    table = prepare(settings, clickhouse)
    scope, every_bucket = Scope(table.keys), list(range(BUCKETS))

    def spoil(key: str) -> None:
        sync = "SETTINGS mutations_sync = 2"
        clickhouse.command(f"ALTER TABLE {table.name} UPDATE age = 0 WHERE id = '{key}' {sync}")

    def change(key: str, version: int) -> None:
        """A newer change of key, published and consumed."""
        spark.sql(f"UPDATE delta.`{path}` SET age = {version * 10} WHERE id = '{key}'")
        publish(spark, endpoints, path, "id", topic=topic, until_version=version)
        Pipeline(into, until_caught_up=True).run()

    def mend(version: int) -> None:
        with lake_side.opened(settings, clickhouse, table.target, table.columns, version) as lake:
            repair(clickhouse, lake, table.target, table.columns, scope, every_bucket, False)

    def age(key: str) -> int:
        view = table.target.current_view
        return int(str(clickhouse.command(f"SELECT age FROM {view} WHERE id = '{key}'")))

    spoil("3")
    assert run_round(table, clickhouse, 4, scope).report.wrong_keys == [{"id": "3"}]
    mend(4)  # the repair lands first: cy is 51 again, as of version 4
    assert age("3") == 51
    change("3", 5)  # ... and the newer change wins over it
    assert age("3") == 50

    spoil("4")
    assert run_round(table, clickhouse, 5, scope).report.wrong_keys == [{"id": "4"}]
    change("4", 6)  # the newer change lands between the round and its repair
    mend(5)
    assert age("4") == 60
    assert run_round(table, clickhouse, 6, scope).report.equal


def test_an_equal_table_under_load_keeps_zero_drift_while_keys_move(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    tables = lake(tmp_path, "a", rows=50)
    path, head = tables["a"]
    topic, group = unique("load"), unique("group")
    stop, producer, raised = following(
        endpoints, [{"table": path, "primary_key": "id", "topic": topic}], spark
    )
    into = consumer_settings(endpoints, topic, ch_database, group=group)
    pipeline = Pipeline(into)
    consumer = threading.Thread(target=pipeline.run)
    settings = as_of(
        endpoints, ch_database, topic, group, table=path, interval_seconds=0.2, metrics_port=0
    )
    watch = Watch(settings)
    watcher = threading.Thread(target=watch.run)
    try:
        _wait_for(lambda: published(endpoints, topic, head), "the table at its head")
        consumer.start()
        watcher.start()
        generator, seen = Generator(path, seed=3), []
        for _ in range(6):  # commits while the watcher compares
            last = generator.commit("update", 20)
            seen.append(_states(watch))
            time.sleep(1.0)
        _wait_for(lambda: published(endpoints, topic, last), "the last commit published")
        _wait_for(lambda: _states(watch)[:2] == (last, 0), "a round at the last commit, settled")
        seen.append(_states(watch))
    finally:
        stop.set()
        pipeline.stop()
        watch.stop.set()
        for thread in (producer, consumer, watcher):
            thread.join(60)
    assert raised == []
    assert Progress({"bootstrap.servers": endpoints.kafka}, topic).last_version() == last
    rounds = [s for s in seen if s[0] is not None]
    assert rounds and all(s[2] == 0 for s in rounds), f"drift reported on an equal table: {seen}"
    assert watch.metrics.problems() == []
    # As of the head before the commits, the keys they changed are moving, and left out.
    table = prepare(settings, watch.client)
    earlier = run_round(table, watch.client, head, Scope(table.keys)).report
    assert earlier.equal and earlier.moving == _keys_changed_after(path, head), earlier.render()


def _states(watch: Watch) -> tuple[Any, ...]:
    """(version, moving, lost + extra + wrong) of the watcher's one table, its last round."""
    [w] = watch.tables
    registry = watch.metrics.registry

    def rows(state: str) -> float:
        found = registry.get_sample_value(
            "cdfbridge_verify_rows", {"table": w.name, "state": state}
        )
        return found or 0.0

    version = registry.get_sample_value("cdfbridge_verify_version", {"table": w.name})
    drift = rows("lost") + rows("extra") + rows("wrong")
    return (None if version is None else int(version), int(rows("moving")), int(drift))


def _keys_changed_after(path: str, version: int) -> int:
    from deltalake import DeltaTable

    feed = DeltaTable(path).load_cdf(starting_version=version + 1).read_all()
    return len(set(feed.column("id").to_pylist()))


def test_a_table_clickhouse_cannot_read_exactly_is_staged_and_compared_alike(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    path = str(tmp_path / "structs")
    create_table(spark, path, "id STRING, st STRUCT<a: INT, b: STRING>")
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES ('1', named_struct('a', 1, 'b', 'x')), ('2', NULL), "
        "('3', named_struct('a', CAST(NULL AS INT), 'b', CAST(NULL AS STRING)))"
    )
    topic = publish(spark, endpoints, path, "id", until_version=1)
    settings = consumed(endpoints, topic, ch_database, table=path)
    table = prepare(settings, clickhouse)
    with lake_side.opened(settings, clickhouse, table.target, table.columns, 1) as lake:
        assert lake.how != "ClickHouse", "a NULL struct reads as a struct of NULLs there"
    [report] = once(settings)
    assert report.equal, report.render()

    clickhouse.command(
        f"ALTER TABLE {table.name} DELETE WHERE id = '2' SETTINGS mutations_sync = 2"
    )
    [report] = once(settings)
    assert report.lost_keys == [{"id": "2"}], report.render()


def test_two_repairs_at_once_leave_the_table_equal(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    path, topic = people(spark, endpoints, tmp_path)
    settings = consumed(endpoints, topic, ch_database, table=path, repair=True)
    table = prepare(settings, clickhouse).target
    sync = "SETTINGS mutations_sync = 2"
    clickhouse.command(f"ALTER TABLE {table.name} DELETE WHERE id = '1' {sync}")
    clickhouse.command(f"ALTER TABLE {table.name} UPDATE name = 'nobody' WHERE id = '3' {sync}")
    reports: list[Any] = []
    both = [threading.Thread(target=lambda: reports.extend(once(settings))) for _ in range(2)]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join(120)
    assert len(reports) == 2 and all(r.equal for r in reports), [r.render() for r in reports]
    rows = clickhouse.query(f"SELECT id, name, age FROM {table.current_view} ORDER BY id")
    assert [tuple(r) for r in rows.result_rows] == [
        ("1", "ann", 31),
        ("3", "cy", 51),
        ("4", "dee", 20),
    ]
