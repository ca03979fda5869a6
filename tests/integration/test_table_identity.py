"""A topic belongs to one Delta table: its progress records name the table and Delta's id of
it. A table created again at the same path stops its producer naming the resync; a second
table given the same topic is refused, and the first table's producer is left running."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from producer.errors import LogReplacedError, TableRecreatedError, TopicClaimedError
from producer.follow.commit_log import CommitLog
from producer.follow.idle import Idle
from producer.resync import resync_command as resync
from producer.run import run
from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.producer_helpers import read_topic, settings

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def write(path: str, commits: int, first_id: int = 0) -> str:
    """A new table of `commits` versions of 10 rows each (delta-rs); returns its Delta id."""
    from deltalake import DeltaTable, write_deltalake

    for commit in range(commits):
        ids = range(first_id + commit * 10, first_id + (commit + 1) * 10)
        rows = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})
        write_deltalake(path, rows, mode="append", configuration=CDF)
    return str(DeltaTable(path).metadata().id)


CDF = {"delta.enableChangeDataFeed": "true"}


def test_a_table_created_again_at_its_path_stops_the_producer_naming_the_resync(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    path, topic = str(tmp_path / "orders"), unique("identity")
    first = write(path, 3)
    run(settings(endpoints, path, "id", topic=topic, until_version=2), spark=spark)
    shutil.rmtree(path)
    second = write(path, 5, first_id=1000)  # versions 0-4: past the old table's last

    with pytest.raises(TableRecreatedError, match=rf"id is {second}.* names {first}.*resync"):
        run(settings(endpoints, path, "id", topic=topic, until_version=4), spark=spark)

    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    resync.request(kafka, topic, wait_s=0)
    run(settings(endpoints, path, "id", topic=topic, until_version=4), spark=spark)
    position = Progress(kafka, topic).read()
    assert position.identity is not None and position.identity.table_id == second
    assert (position.version, position.generation.number) == (4, 1)


def test_a_table_created_again_under_a_running_producer_stops_it(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    path, topic = str(tmp_path / "orders"), unique("identity")
    write(path, 3)
    stop, raised = threading.Event(), list[BaseException]()
    follower = threading.Thread(
        target=_run, args=(settings(endpoints, path, "id", topic=topic), spark, stop, raised)
    )
    follower.start()
    try:
        _wait_for(
            lambda: Progress({"bootstrap.servers": endpoints.kafka}, topic).last_version() == 2
        )
        shutil.rmtree(path)
        write(path, 1, first_id=1000)  # version 0 only
        # No new commit file: found when the whole log is loaded, once a minute of idle
        # polls, at the first poll after it (they are idle_poll_max_s apart by then).
        follower.join(timeout=Idle.LOG_CHECK_S + 30)
    finally:
        stop.set()
        follower.join(timeout=60)

    assert [type(e) for e in raised] == [TableRecreatedError]
    assert "its log ends at version 0, and version 2 is published" in str(raised[0])


@pytest.mark.parametrize("on_change", ["stop", "resync"])
def test_a_table_created_again_past_the_published_version_publishes_none_of_its_commits_as_the_old(
    spark: Any, endpoints: Endpoints, tmp_path: Path, on_change: str
) -> None:
    path, topic = str(tmp_path / "orders"), unique("identity")
    write(path, 3)
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    follow = settings(
        endpoints, path, "id", topic=topic, until_version=4, on_incompatible_change=on_change
    )
    stop, raised = threading.Event(), list[BaseException]()
    follower = threading.Thread(target=_run, args=(follow, spark, stop, raised))
    follower.start()
    try:
        _wait_for(lambda: Progress(kafka, topic).last_version() == 2)
        shutil.rmtree(path)
        second = write(path, 5, first_id=1000)  # versions 0-4, past the 2 published, at once
        follower.join(timeout=120)
    finally:
        stop.set()
        follower.join(timeout=60)

    position, records = Progress(kafka, topic).read(), read_topic(endpoints, topic)
    start = position.generation.start  # empty while there is one generation
    old = [r.key["id"] for r in records if r.offset < start.get(r.partition, r.offset + 1)]
    assert sorted(old) == list(range(30))  # the old table's rows alone, as the old table's
    if on_change == "stop":
        assert [type(e) for e in raised] == [TableRecreatedError]
        assert position.version == 2
    else:  # a new generation: the new table's snapshot at 4
        assert raised == []
        assert position.identity is not None and position.identity.table_id == second
        assert (position.version, position.generation.number) == (4, 1)
        new = sorted(r.key["id"] for r in records if r.key["id"] >= 1000)
        assert new == list(range(1000, 1050))


def test_a_table_created_again_between_its_load_and_the_first_look_at_its_log_is_caught(
    spark: Any, tmp_path: Path
) -> None:
    from delta.tables import DeltaTable

    path = str(tmp_path / "orders")
    write(path, 3)  # versions 0-2, all published
    commits = CommitLog.of(spark, DeltaTable.forPath(spark, path)._jdt.deltaLog())  # the load
    shutil.rmtree(path)
    write(path, 5, first_id=1000)  # another table's versions 0-4, before the first poll

    with pytest.raises(LogReplacedError, match="version 2 was written again since its load"):
        commits.newest(2)


def test_a_second_table_on_a_topic_is_refused_and_the_first_keeps_publishing(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    # Both would default to cdfbridge.orders; here they are given one topic outright.
    eu, us, topic = str(tmp_path / "eu" / "orders"), str(tmp_path / "us" / "orders"), unique("t")
    write(eu, 1)
    write(us, 1)
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    stop, raised = threading.Event(), list[BaseException]()
    follower = threading.Thread(
        target=_run, args=(settings(endpoints, eu, "id", topic=topic), spark, stop, raised)
    )
    follower.start()
    try:
        _wait_for(lambda: Progress(kafka, topic).last_version() == 0)

        with pytest.raises(TopicClaimedError, match=rf"another table, {eu} .*follows {us}"):
            run(settings(endpoints, us, "id", topic=topic, until_version=0), spark=spark)

        write(eu, 1, first_id=100)  # version 1, published by the first producer: not fenced
        _wait_for(lambda: Progress(kafka, topic).last_version() == 1)
    finally:
        stop.set()
        follower.join(timeout=60)
    assert raised == []


def _run(settings: Any, spark: Any, stop: threading.Event, raised: list[BaseException]) -> None:
    try:
        run(settings, spark=spark, stop=stop)
    except BaseException as exc:  # handed to the test
        raised.append(exc)


def _wait_for(condition: Any, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.3)
