"""A version too large for one transaction is published in several, one per key-hash slice,
each with a progress record naming the slices done: a producer killed with SIGKILL between two
of them resumes after the last, so every change reaches read_committed readers once."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_producer_recovery import producer_process, wait_for_messages
from tests.producer_helpers import read_topic

pytestmark = pytest.mark.integration
ROWS = 40_000


def write(path: str) -> None:
    """Version 0: 10 rows; version 1: ROWS rows in one commit (delta-rs)."""
    from deltalake import write_deltalake

    for ids in (range(10), range(10, 10 + ROWS)):
        rows = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})
        write_deltalake(
            path, rows, mode="append", configuration={"delta.enableChangeDataFeed": "true"}
        )


@pytest.mark.parametrize(
    ("snapshot", "whole_before"),
    [(False, 0), (True, None)],
    ids=["changes of version 1", "a snapshot at version 1"],
)
def test_a_version_killed_between_its_transactions_is_published_once(
    endpoints: Endpoints, tmp_path: Path, snapshot: bool, whole_before: int | None
) -> None:
    path, topic = str(tmp_path / "large"), unique("large")
    write(path)
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    # 100 slices, a transaction each: a wide window to be killed in, however fast they go.
    flags = ["--until-version", "1", "--max-rows-per-chunk", str(ROWS // 100)]
    flags += ["--snapshot"] if snapshot else []
    first = producer_process(endpoints, path, topic, *flags)
    try:
        # Killed once two slices' messages are in the topic (its end offset, a cheap look).
        wait_for_messages(endpoints, topic, at_least=10 + 2 * ROWS // 100, timeout_s=180)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        first.kill()
    killed_at = Progress(kafka, topic).read()

    again = producer_process(endpoints, path, topic, *flags)
    assert again.wait(300) == 0, again.stderr.read().decode()[-3000:] if again.stderr else ""

    part = killed_at.part
    assert part is not None and killed_at.version == whole_before  # between two parts of 1
    assert (part.first, part.last, part.snapshot) == (1, 1, snapshot) and part.slices > 1
    seen = Counter(
        (r.key["id"], r.value["_commit_version"]) for r in read_topic(endpoints, topic) if r.value
    )
    assert sum(seen.values()) == len(seen) == 10 + ROWS  # no gap, no duplicate
    final = Progress(kafka, topic).read()
    assert (final.version, final.part) == (1, None)
