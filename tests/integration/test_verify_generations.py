"""The proof at V's generation: a table created again at its path, read without a rebuild
(`rebuild = "manual"`), leaves the old generation's rows in the replica, some with commit
versions far above the new table's. They are not moving (an older generation's row never
is): the round reports them as extra, and a repair deletes them in the new generation."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from consumer.process import run as consume
from producer.resync import resync_command
from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_generation_order import write
from tests.integration.test_verify_asof import as_of
from tests.producer_helpers import publish
from verify.cli import main
from verify.rounds import once

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_an_older_generations_rows_are_reported_and_repaired_in_the_new_one(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = str(tmp_path / "t"), unique("gen_proof")
    for commit in range(5):  # versions 0-4 of the first table: ids 0-49
        write(path, range(commit * 10, commit * 10 + 10), "old")
    source = {"topic": topic, "on_incompatible_change": "resync"}
    publish(spark, endpoints, path, "id", until_version=4, **source)
    into = consumer_settings(endpoints, topic, ch_database, table="t")
    assert consume(into, until_caught_up=True) == []

    shutil.rmtree(path)
    write(path, range(40, 60), "new")  # version 0 of the table created again
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    resync_command.request(kafka, topic, wait_s=0)
    publish(spark, endpoints, path, "id", until_version=0, **source)
    assert Progress(kafka, topic).read().generation.number == 1
    assert consume(into, until_caught_up=True) == []  # manual: the old rows stay

    settings = as_of(
        endpoints, ch_database, topic, into.consumer.group, table=path, clickhouse_table="t"
    )
    [report] = once(settings)
    assert (report.version, report.moving) == (0, 0), report.render()
    assert (report.lost, report.extra, report.wrong) == (0, 40, 0), report.render()

    consumer_env(monkeypatch, endpoints, ch_database)
    args = ["--table", path, "--topic", topic, "--group", into.consumer.group]
    assert main([*args, "--clickhouse-table", "t", "--repair"]) == 0, "repaired, then equal"
    rows = clickhouse.query(f"SELECT id, name FROM `{ch_database}`.`t_current` ORDER BY id")
    assert [tuple(r) for r in rows.result_rows] == [(i, "new") for i in range(40, 60)]
    deletes = clickhouse.query(
        f"SELECT DISTINCT _generation FROM `{ch_database}`.`t` "  # noqa: S608
        "WHERE _change_type = 'delete' AND id < 40"
    ).result_rows
    assert deletes == [(1,)], "the repair's deletes are the new generation's"
