"""A rebuild killed with SIGKILL after its table is swapped in, before the live group is
moved: the table's generation mark records the offsets its rows reach, so the live group,
which lagged in the older generation, starts there on restart instead of writing that
generation's tail (whose keys the new table has deleted) into it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from consumer.group.loop import Pipeline
from consumer.process import run
from consumer.status import status
from producer.resync import resync_command
from services.clickhouse_client import connect
from services.table_marks import marked
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_bootstrap import _env
from tests.integration.test_partial_rebuild import _equal
from tests.producer_helpers import publish

pytestmark = [pytest.mark.integration, pytest.mark.spark]
CDF = {"delta.enableChangeDataFeed": "true"}


def _append(path: str, ids: range) -> None:
    from deltalake import write_deltalake

    rows = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})
    write_deltalake(path, rows, mode="append", configuration=CDF)


def test_a_rebuild_killed_after_its_swap_leaves_the_live_group_where_the_table_ends(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "orders")
    _append(path, range(10))
    topic = publish(spark, endpoints, path, "id", until_version=0)
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    Pipeline(into, until_caught_up=True).run()  # the live group, left behind version 1
    _append(path, range(10, 20))
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)
    DeltaTable(path).delete("id >= 10")  # version 2, published only in generation 1's snapshot
    resync_command.request({"bootstrap.servers": endpoints.kafka}, topic, wait_s=0)
    publish(spark, endpoints, path, "id", topic=topic, until_version=2)

    env = {**_env(endpoints, ch_database), "CDFBRIDGE_FAULT_POINT": "rebuild.swapped"}
    command = [sys.executable, "-m", "consumer", "--topic", topic, "--group", into.consumer.group]
    killed = subprocess.run(
        [*command, "rebuild", "--from-topic"], env=env, capture_output=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-3000:]
    found = marked(connect(into.clickhouse), into.target())
    assert found.generation == 1 and found.start  # swapped in, the group not moved
    [left] = status(into).shadows  # the older table, swapped out and not dropped
    assert left.startswith(f"`{ch_database}`.`t__rebuild_")

    assert run(into, until_caught_up=True) == []  # the live group, restarted

    assert _equal(endpoints, ch_database, path, topic)  # ids 10-19 stay deleted
