"""The as-of comparison's pure parts: slices of the key buckets, when a group has consumed
a version, the watcher's metrics, the report's lines, and the newest row's age."""

import time

from prometheus_client import CollectorRegistry, generate_latest

from consumer.freshness import NEWEST_ROW_AGE, NewestRowAge, commit_times
from consumer.group.registry import Schemas
from services.group_positions import PartitionOffsets
from verify.asof import BUCKETS, Scope
from verify.asof_check import Round
from verify.consumed import Mark, passed
from verify.metrics import Metrics
from verify.report import Report, Side


def test_a_whole_table_has_no_condition_and_a_slice_takes_its_buckets() -> None:
    assert Scope(["id"]).within() == "1"
    sliced = Scope(["a", "b"], slices=4, slice=3)
    assert sliced.within() == f"cityHash64(`a`, `b`) % {BUCKETS} % 4 = 3"
    assert sliced.within([1, 7]).endswith(f"cityHash64(`a`, `b`) % {BUCKETS} IN (1, 7)")


def _at(partition: int, committed: int, high: int, caught_up: bool = False) -> PartitionOffsets:
    return PartitionOffsets(partition, committed, 0, high, caught_up)


def test_a_mark_is_passed_once_every_partition_is_read_past_it() -> None:
    mark = Mark(7, {0: 10, 1: 4})
    assert passed(mark, {0: _at(0, 10, 12), 1: _at(1, 5, 5)}, {0: 12, 1: 5})
    assert not passed(mark, {0: _at(0, 9, 12), 1: _at(1, 5, 5)}, {0: 12, 1: 5})
    assert not passed(mark, {0: _at(0, 10, 12)}, {0: 12, 1: 5}), "a partition unread"


def test_a_group_that_read_all_passes_a_mark_its_commit_markers_lie_after() -> None:
    mark = Mark(7, {0: 10})
    # the committed offset sits before the last transaction's commit marker
    assert passed(mark, {0: _at(0, 9, 10, caught_up=True)}, {0: 10})
    # ... but not while a transaction below the mark is still open on the partition
    assert not passed(mark, {0: _at(0, 9, 10, caught_up=True)}, {0: 8})


def test_an_empty_partition_never_committed_is_passed() -> None:
    assert passed(Mark(0, {0: 0}), {0: _at(0, -1001, 0)}, {0: 0})


def _report(lost: int, moving: int) -> Report:
    side = Side(10, 1, 10)
    return Report("/lake/t", 3, "db.t", side, side, lost=lost, moving=moving)


def test_the_metrics_hold_the_last_round_per_table_and_health_names_failures() -> None:
    metrics = Metrics()
    metrics.failed("db.t", "ClickHouse did not answer")
    assert metrics.problems() == ["db.t: ClickHouse did not answer"]
    metrics.record("db.t", Round(_report(lost=1, moving=4), 0.5, 20))
    text = generate_latest(metrics.registry).decode()
    assert 'cdfbridge_verify_rows{state="lost",table="db.t"} 1.0' in text
    assert 'cdfbridge_verify_rows{state="moving",table="db.t"} 4.0' in text
    assert 'cdfbridge_verify_version{table="db.t"} 3.0' in text
    assert 'cdfbridge_verify_round_rows{table="db.t"} 20.0' in text
    assert metrics.problems() == [], "a round that passed clears the table's problem"


def _seconds(metrics: Metrics, name: str) -> float | None:
    return metrics.registry.get_sample_value(f"cdfbridge_verify_{name}_seconds", {"table": "db.t"})


def test_an_idle_table_is_neither_behind_nor_proved_long_ago() -> None:
    """Its last commit is old, and nothing came after it: lag and proof age are 0."""
    metrics = Metrics(stale_seconds=900)
    metrics.behind("db.t", None)
    metrics.unproved("db.t", None)
    assert (_seconds(metrics, "lag"), _seconds(metrics, "age")) == (0.0, 0.0)
    assert metrics.problems() == []


def test_a_table_whose_consumer_stalled_is_behind_and_named_by_health() -> None:
    """A commit after the consumed version has waited an hour: lag and age count from it."""
    metrics = Metrics(stale_seconds=900)
    an_hour_ago = int((time.time() - 3600) * 1000)
    metrics.behind("db.t", an_hour_ago)
    metrics.unproved("db.t", an_hour_ago)
    lag, age = _seconds(metrics, "lag"), _seconds(metrics, "age")
    assert lag is not None and age is not None and 3600 <= lag < 3660 and 3600 <= age < 3660
    [problem] = metrics.problems()
    assert problem.startswith("db.t: behind Delta for 36")


def test_a_report_names_its_slice_and_its_moving_keys() -> None:
    text = Report("/lake/t", 3, "db.t", Side(1, 1, 1), Side(1, 1, 1), moving=2, slice=(1, 4))
    assert "key slice 2 of 4; 2 keys moving" in text.render()
    assert text.equal


def test_the_newest_rows_age_is_computed_when_scraped_and_never_goes_back() -> None:
    registry = CollectorRegistry()
    ages = NewestRowAge(registry)
    now = time.time()
    ages.saw("t", now - 30)
    ages.saw("t", now - 90)  # an older batch written after a newer one
    age = registry.get_sample_value(NEWEST_ROW_AGE, {"topic": "t"})
    assert age is not None and 30 <= age < 40


def test_a_value_whose_commit_time_cannot_be_read_gives_none_and_never_raises() -> None:
    nowhere = Schemas({"url": "http://127.0.0.1:9", "max.retries": 0})  # nothing listens
    assert commit_times([b"not framed"], nowhere) is None
    framed = b"\x00" + (7).to_bytes(4, "big") + b"\x02"
    assert commit_times([framed, framed], nowhere) is None
    assert commit_times([], nowhere) is None
