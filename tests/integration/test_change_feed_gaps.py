"""A range of versions is read whole or refused. The log's cleanup deletes the commit files
behind a checkpoint; when the first version of a range is the last one deleted, every later
commit file is still there, and Delta's change-feed builder, left to itself, reads the range
from the next file there without a word. The producer's read refuses it instead, whether the
file was gone before the range was planned or went while it was read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from producer.errors import VersionUnavailableError
from producer.follow.log_state import load_head
from producer.read.cdf import DirectChangeFeed
from producer.spark_errors import reading

pytestmark = [pytest.mark.integration, pytest.mark.spark]
KERNEL = pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "deltalog"])


def table(spark: Any, path: str) -> Any:
    """Versions 1-6, one row each (id = version), a checkpoint at 3 and at 6."""
    from delta.tables import DeltaTable

    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING) USING delta TBLPROPERTIES "
        "(delta.enableChangeDataFeed = true, delta.checkpointInterval = 3)"
    )
    for version in range(1, 7):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES ({version}, 'n{version}')")
    assert os.path.exists(_commit_file(path, 3).replace(".json", ".checkpoint.parquet"))
    return DeltaTable.forPath(spark, path)


def feed_of(spark: Any, path: str, kernel: bool) -> DirectChangeFeed:
    """The feed as a start opens it: its head loaded by Kernel, or its DeltaLog at once."""
    delta = table(spark, path)
    return DirectChangeFeed(
        spark, lambda: delta._jdt.deltaLog(), loaded=load_head(spark, path) if kernel else None
    )


@KERNEL
def test_a_range_whose_first_commit_file_is_gone_is_refused(
    spark: Any, tmp_path: Path, kernel: bool
) -> None:
    path = str(tmp_path / "t")
    feed = feed_of(spark, path, kernel)
    os.remove(_commit_file(path, 2))  # as the cleanup would, behind the checkpoint at 3
    assert feed.commits is not None
    feed.commits.read_back(2, 6)  # as a start does: 3-6 known, none changing the table

    with pytest.raises(VersionUnavailableError, match="commit file of version 2 is gone"):
        _read(feed, path, 2, 6)


@KERNEL
def test_a_commit_file_cleaned_up_after_it_was_read_is_refused(
    spark: Any, tmp_path: Path, kernel: bool
) -> None:
    path = str(tmp_path / "t")
    feed = feed_of(spark, path, kernel)
    assert feed.commits is not None
    feed.commits.read_back(2, 6)  # 2 read while it was there
    os.remove(_commit_file(path, 2))

    with pytest.raises(VersionUnavailableError, match="DELTA_MISSING_FILES_UNEXPECTED_VERSION"):
        _read(feed, path, 2, 6)


@KERNEL
def test_a_whole_range_is_read(spark: Any, tmp_path: Path, kernel: bool) -> None:
    path = str(tmp_path / "t")
    feed = feed_of(spark, path, kernel)

    rows = _read(feed, path, 2, 6)

    assert rows == [(v, v) for v in range(2, 7)]


def _read(feed: DirectChangeFeed, path: str, first: int, last: int) -> list[tuple[int, int]]:
    with reading(path, first, last):
        frame = feed.read(first, last)
        assert frame is not None
        found = frame.select("_commit_version", "id").collect()
    return sorted((int(row[0]), int(row[1])) for row in found)


def _commit_file(path: str, version: int) -> str:
    return os.path.join(path, "_delta_log", f"{version:020d}.json")
