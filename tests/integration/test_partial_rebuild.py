"""A rebuild from the topic never swaps in a version that is published in part: a producer
stopped between the slices of a snapshot leaves the rebuild refused, naming it, and nothing
swapped in; once the producer has published the rest, the rebuild is equal to the table."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from consumer.rebuild import whole
from consumer.rebuild.steps import rebuild
from services.progress_topic import Progress
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.consumer_support import verify_settings
from tests.integration.test_large_versions import ROWS, write
from tests.integration.test_producer_recovery import producer_process, wait_for_messages
from verify.check import verify

pytestmark = pytest.mark.integration
FLAGS = ["--snapshot", "--until-version", "1", "--max-rows-per-chunk", str(ROWS // 100)]


def _equal(endpoints: Endpoints, database: str, path: str, topic: str) -> bool:
    return bool(verify(verify_settings(endpoints, database, path, topic=topic)).equal)


def test_a_rebuild_refuses_a_snapshot_its_stopped_producer_published_in_part(
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = str(tmp_path / "large"), unique("partial")
    write(path)
    first = producer_process(endpoints, path, topic, *FLAGS)
    try:  # killed once two of the snapshot's 100 slices are in the topic
        wait_for_messages(endpoints, topic, at_least=2 * ROWS // 100, timeout_s=180)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        first.kill()
    part = Progress({"bootstrap.servers": endpoints.kafka}, topic).read().part
    assert part is not None and part.snapshot and part.done + 1 < part.slices
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    monkeypatch.setattr(whole, "STALL_S", 3.0)

    with pytest.raises(whole.PartialVersionError, match=rf"Start the producer of {path}"):
        rebuild(into, source="topic")
    assert not clickhouse.command(f"EXISTS TABLE `{ch_database}`.t")  # nothing swapped in

    again = producer_process(endpoints, path, topic, *FLAGS)
    assert again.wait(300) == 0, again.stderr.read().decode()[-3000:] if again.stderr else ""
    done = rebuild(into, source="topic")
    assert done.rows == 10 + ROWS
    assert _equal(endpoints, ch_database, path, topic)
