"""A start learns the width of a change before its first chunk can fill the driver. A first
chunk read in a Spark job of its own is read without a sample of the width, each change
bounded to its share of max_bytes_per_chunk in that job; a wider change fails the job, and
the start samples the width and plans the chunk again. Either way every change is
published once (producer/read/width.py)."""

import logging
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame

from producer.encode.slices import sample as encoded_sample
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_cycle import following, published
from tests.integration.test_many_tables import _wait_for, changes_of, published_once

pytestmark = [pytest.mark.integration, pytest.mark.spark]

FIRST_ROWS = 1_500  # more than a width sample: a start samples or bounds its first chunk


@pytest.mark.parametrize(
    ("max_bytes", "samples"),
    [(None, 0), (FIRST_ROWS * (32 + 20), 1)],  # the bound: 20 bytes, narrower than any change
    ids=["within-the-bound", "wider-than-the-bound"],
)
def test_a_start_reads_its_first_chunk_bounded_or_sampled_and_publishes_every_change_once(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    max_bytes: int | None,
    samples: int,
) -> None:
    monkeypatch.setattr("producer.read.chunks.HEAD_ROWS", 200)  # a span of more is read alone
    monkeypatch.setattr("producer.follow.course.MIN_ROW_BOUND", 1)  # any bound is tried
    sampled: list[int] = []

    def counted(frame: DataFrame, encoding: Any) -> Any:
        sampled.append(1)
        return encoded_sample(frame, encoding)

    monkeypatch.setattr("producer.read.width.sample", counted)
    path = str(tmp_path / "t")
    generator = Generator(path, seed=3)
    generator.commit("insert", FIRST_ROWS)
    last = generator.commit("update", 300)
    topic = unique("start_width")
    entry: dict[str, Any] = {"table": path, "primary_key": "id", "topic": topic}
    if max_bytes is not None:
        entry["max_bytes_per_chunk"] = max_bytes
    caplog.set_level(logging.INFO, logger="cdfbridge")
    stop, thread, raised = following(endpoints, [entry], spark)
    try:
        _wait_for(lambda: published(endpoints, topic, last), "the table's last version")
    finally:
        stop.set()
        thread.join(60)
    assert raised == []
    assert len(sampled) == samples
    too_wide = [m for m in caplog.messages if '"first_read_too_wide"' in m and path in m]
    assert len(too_wide) == samples
    assert len(published_once(endpoints, topic)) == changes_of(path, last)
