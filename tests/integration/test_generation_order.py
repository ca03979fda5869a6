"""A newer generation's rows outrank an older generation's, whatever their commit versions.

A table created again at its path starts its versions over at 0, and a resync publishes it
as generation 1. A table that takes the new generation's rows without a rebuild (manual
mode, until `rebuild` is run; an engine that has not been applied again) must hold the new
table's rows for every key the two share, not the old table's later-committed ones.

A group moved by hand before the generation's start jumps to where its table's rows reach
instead of writing the older generation's rows into it.

Upgrades: a generation started by an earlier release, whose values have no `_generation`,
keeps that shape to its end, and a table made from such values takes the column and the
full rule when a newer generation's values arrive.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema

from consumer.cli import main as consumer_cli
from consumer.process import run as consume
from producer.resync import resync_command
from schemas.avro import value_schema
from schemas.changes import GENERATION, version
from schemas.naming import value_subject
from services import offsets
from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import ORDERS, Changes, consumer_env, order
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_partial_rebuild import _equal
from tests.integration.test_rebuild_race import _two_generations
from tests.producer_helpers import publish, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CDF = {"delta.enableChangeDataFeed": "true"}


def write(path: str, ids: range, name: str) -> None:
    """One commit of `ids`, each named `name`, with delta-rs."""
    from deltalake import write_deltalake

    rows = pa.table({"id": pa.array(ids, pa.int64()), "name": [name] * len(ids)})
    write_deltalake(path, rows, mode="append", configuration=CDF)


def test_a_table_created_again_outranks_the_old_tables_later_commits_before_a_rebuild(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    path, topic = str(tmp_path / "t"), unique("gen_order")
    for commit in range(5):  # versions 0-4, ids 40-49 at 4
        write(path, range(commit * 10, commit * 10 + 10), "old")
    source = {"topic": topic, "on_incompatible_change": "resync"}
    publish(spark, endpoints, path, "id", until_version=4, **source)
    settings = consumer_settings(endpoints, topic, ch_database, table="t")
    assert consume(settings, until_caught_up=True) == []

    shutil.rmtree(path)
    write(path, range(40, 60), "new")  # version 0 of another table
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    resync_command.request(kafka, topic, wait_s=0)
    publish(spark, endpoints, path, "id", until_version=0, **source)  # generation 1
    assert Progress(kafka, topic).read().generation.number == 1
    assert consume(settings, until_caught_up=True) == []  # manual mode: no rebuild

    names = dict(
        clickhouse.query(
            f"SELECT id, name FROM `{ch_database}`.`t_current` WHERE id >= 40"  # noqa: S608
        ).result_rows
    )
    old = sorted(key for key, name in names.items() if name != "new")
    assert sorted(names) == list(range(40, 60))
    assert old == [], f"keys {old} kept the old table's rows over generation 1's"


def test_a_table_of_an_older_shape_takes_the_generation_column_and_rule(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    """A table made from values without `_generation` (an earlier release's generation)
    gets the column and the full rule when a newer generation's values arrive; the rows it
    holds keep their versions, and the newer generation's outrank them."""
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.use_schema(ORDERS, generation=False)
    changes.send([order(n) for n in range(3)], "snapshot", 9)
    settings = consumer_settings(endpoints, topic, ch_database)
    assert consume(settings, until_caught_up=True) == []
    changes.use_schema(ORDERS)
    changes.generation = 1
    changes.send([order(1, "new")], "snapshot", 0)
    assert consume(settings, until_caught_up=True) == []

    rows = clickhouse.query(
        f"SELECT id, name, _generation, _version FROM `{ch_database}`.`{topic}` FINAL "  # noqa: S608
        "ORDER BY id"
    ).result_rows
    assert rows == [
        (0, "o0", 0, version(9, "snapshot")),
        (1, "new", 1, version(0, "snapshot", generation=1)),
        (2, "o2", 0, version(9, "snapshot")),
    ]


def test_a_generation_started_without_the_field_keeps_its_shape_until_the_next(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    """A topic whose generation an earlier release started (its value schema has no
    `_generation`) goes on in that shape; the next generation's values carry it."""
    from deltalake import DeltaTable

    path, topic = str(tmp_path / "t"), unique("gen_shape")
    write(path, range(10), "a")
    table_schema = json.loads(DeltaTable(path).schema().to_json())
    earlier = value_schema(table_schema, topic, ["id"], generation=False)
    registry = endpoints.registry_client()
    registry.register_schema(value_subject(topic), Schema(json.dumps(earlier), "AVRO"))
    publish(spark, endpoints, path, "id", topic=topic, snapshot=True, until_version=0)
    write(path, range(10, 20), "b")
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    resync_command.request(kafka, topic, wait_s=0)
    publish(spark, endpoints, path, "id", topic=topic, until_version=1)  # generation 1

    start = Progress(kafka, topic).read().generation.start
    shapes = {
        (r.offset >= start[r.partition], GENERATION in r.value, r.value.get(GENERATION))
        for r in read_topic(endpoints, topic)
        if r.value is not None
    }
    assert shapes == {(False, False, None), (True, True, 1)}


def test_a_group_reset_before_the_generations_start_jumps_to_it_and_ends_equal(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`reset-offsets --to-earliest` moves the group into generation 0, whose keys the
    snapshot of generation 1 no longer has: the group starts where its table's rows reach."""
    path = str(tmp_path / "orders")
    topic = _two_generations(spark, endpoints, path)  # generation 0 deleted a third of it
    settings = consumer_settings(endpoints, topic, ch_database, table="t")
    assert consume(settings, until_caught_up=True) == []  # a new group: from generation 1
    assert _equal(endpoints, ch_database, path, topic)

    consumer_env(monkeypatch, endpoints, ch_database)
    args = ["--topic", topic, "--group", settings.consumer.group, "reset-offsets"]
    assert consumer_cli(args + ["--to-earliest"]) == 0
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    assert min(offsets.committed(kafka, settings.consumer.group, topic).values()) == 0
    assert consume(settings, until_caught_up=True) == []

    assert _equal(endpoints, ch_database, path, topic)
