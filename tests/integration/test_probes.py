"""The idle tables' grouped looks for their next commit files (producer/follow/probes.py), on real
Delta logs through Spark's Hadoop file system."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from producer.follow.commit_log import CommitLog
from producer.follow.probes import Probe, Probes
from tests.integration.test_table_identity import write

pytestmark = [pytest.mark.integration, pytest.mark.spark]


class CountedProbes(Probes):
    """Probes that count their calls to the file system, and the paths of each."""

    def __init__(self, spark: Any) -> None:
        super().__init__(spark._jvm.org.apache.hadoop.fs.Path)
        self.calls: list[set[str]] = []

    def _there(self, fs: Any, paths: set[str]) -> set[str]:
        self.calls.append(set(paths))
        return super()._there(fs, paths)


def commit_log(spark: Any, path: str) -> CommitLog:
    from delta.tables import DeltaTable

    return CommitLog.of(spark, DeltaTable.forPath(spark, path)._jdt.deltaLog())


def next_probe(spark: Any, path: str, versions: int) -> Probe:
    """The look at the next commit file of a new table of `versions` versions at path."""
    write(path, versions)
    probe = commit_log(spark, path).probe(versions - 1)
    assert probe is not None
    return probe


def looks(probes: Probes, logs: dict[str, CommitLog], after: int) -> dict[str, bool | None]:
    """Each log's look after version `after`, all asked at once from threads of their own."""
    found: dict[str, bool | None] = {}
    stop = threading.Event()

    def look(name: str) -> None:
        probe = logs[name].probe(after)
        assert probe is not None
        found[name] = probes.look(probe, 1.0, stop)  # all asked before the first is due

    threads = [threading.Thread(target=look, args=(name,)) for name in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return found


def test_idle_tables_looks_are_one_call_answering_each_table_as_exists_would(
    spark: Any, tmp_path: Path
) -> None:
    paths = {f"t{i}": str(tmp_path / f"t{i}") for i in range(6)}
    for path in paths.values():
        write(path, 2)  # versions 0-1
    logs = {name: commit_log(spark, path) for name, path in paths.items()}
    for name in ("t1", "t4"):
        write(paths[name], 1, first_id=100)  # version 2 in two of them
    probes = CountedProbes(spark)
    try:
        found = looks(probes, logs, 1)
    finally:
        probes.close()

    assert found == {name: name in ("t1", "t4") for name in paths}
    assert len(probes.calls) == 1 and len(probes.calls[0]) == 6  # one call for the six


def test_a_found_look_is_what_the_next_poll_reads_and_a_missing_one_costs_no_call(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "orders")
    write(path, 2)
    log = commit_log(spark, path)
    probe = log.probe(1)
    assert probe is not None and probe.version == 2

    log.looked(2, False)
    write(path, 1, first_id=100)  # version 2, after the look that found none
    assert log.newest(1) == 1  # the look's answer, not a call of its own
    assert log.newest(1) == 2  # the next poll looks again and reads it

    probe = log.probe(2)
    assert probe is not None and probe.version == 3  # the first version not read yet


def test_a_look_of_a_table_told_to_stop_ends_without_waiting_its_time(
    spark: Any, tmp_path: Path
) -> None:
    probe = next_probe(spark, str(tmp_path / "orders"), 1)
    probes, stop = Probes(spark._jvm.org.apache.hadoop.fs.Path), threading.Event()
    answer: list[bool | None] = []
    looking = threading.Thread(target=lambda: answer.append(probes.look(probe, 3600, stop)))
    looking.start()
    stop.set()
    looking.join(timeout=30)
    probes.close()

    assert answer == [None]  # told to stop, not looked at: an hour's wait not waited


def test_a_path_a_pattern_would_read_is_looked_at_alone(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "orders,2024")
    write(path, 1)
    log = commit_log(spark, path)

    assert log.probe(0) is None  # its table waits and polls with its own call
    write(path, 1, first_id=100)
    assert log.newest(0) == 1


class Waits:
    """An idle table's waits (producer/follow/idle.py Idle): 0.2 s apart, until wake_by."""

    def __init__(self, wake_in_s: float) -> None:
        self.until = time.monotonic() + wake_in_s
        self.waits = 0

    def next_wait_s(self) -> float:
        self.waits += 1
        return 0.2

    def wake_by(self) -> float:
        return self.until


def test_a_table_whose_file_is_not_there_is_looked_at_again_without_waking_it(
    spark: Any, tmp_path: Path
) -> None:
    path = str(tmp_path / "orders")
    probe = next_probe(spark, path, 2)
    probes, stop, waits = CountedProbes(spark), threading.Event(), Waits(wake_in_s=600)
    answer: list[bool | None] = []
    looking = threading.Thread(target=lambda: answer.append(probes.look(probe, 0.2, stop, waits)))
    looking.start()
    time.sleep(1.5)
    assert answer == [] and len(probes.calls) >= 3  # looked at again and again, still asleep
    write(path, 1, first_id=100)  # version 2
    looking.join(timeout=30)
    probes.close()

    assert answer == [True]


def test_a_table_wakes_by_its_time_though_its_file_is_not_there(spark: Any, tmp_path: Path) -> None:
    probe = next_probe(spark, str(tmp_path / "orders"), 2)
    probes, waits = Probes(spark._jvm.org.apache.hadoop.fs.Path), Waits(wake_in_s=1.0)
    answer = probes.look(probe, 0.2, threading.Event(), waits)
    probes.close()

    assert answer is False and waits.waits >= 2  # its whole log's load falls due
