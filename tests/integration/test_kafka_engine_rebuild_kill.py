"""`kafka-engine-ddl --apply` killed with SIGKILL after it rebuilt a table for a new
generation, before it made the Kafka table again: the next apply gives the engine the
generation's group, from where the rebuilt rows reach, not the old group, which lagged in
the older generation (whose keys the new table has deleted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main as consumer_main
from producer.resync import resync_command
from schemas.target import Target
from services.table_marks import built_from, held
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.test_auto_resync import _settled
from tests.integration.test_rebuild_kill import _append
from tests.producer_helpers import publish

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_an_apply_killed_after_its_rebuild_reads_on_with_the_generations_group(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "orders")
    _append(path, range(10))
    topic = publish(spark, endpoints, path, "id", until_version=0)
    consumer_env(monkeypatch, endpoints, ch_database)
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__REBUILD", "auto")
    apply = ["--topic", topic, "--group", f"{topic}-g", "--table", "t", "kafka-engine-ddl"]
    apply.append("--apply")
    assert consumer_main(apply) == 0
    assert _settled(endpoints, ch_database, path, topic)
    # The engine stops reading (no view pulls from its Kafka table): its group lags.
    clickhouse.command(f"DROP VIEW `{ch_database}`.t_kafka_mv SYNC")
    _append(path, range(10, 20))
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    DeltaTable(path).delete("id >= 10")  # version 2: only in generation 1's snapshot
    resync_command.request({"bootstrap.servers": endpoints.kafka}, topic, wait_s=0)
    publish(spark, endpoints, path, "id", topic=topic, until_version=2)

    env = {**os.environ, "CDFBRIDGE_FAULT_POINT": "kafka_engine_rebuild.rebuilt"}
    killed = subprocess.run(
        [sys.executable, "-m", "consumer", *apply], env=env, capture_output=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-3000:]
    target = Target(ch_database, "t")
    assert held(clickhouse, target) == 1 and built_from(clickhouse, target) is None

    assert consumer_main(apply) == 0  # the engine made again

    built = built_from(clickhouse, target)
    assert built is not None and built.group == f"{topic}-g-clickhouse-g1"
    assert _settled(endpoints, ch_database, path, topic)  # ids 10-19 stay deleted
