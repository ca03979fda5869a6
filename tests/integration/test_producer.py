"""The producer publishes a Delta table's Change Data Feed to Kafka, exactly once."""

import json
import logging
import urllib.request
from collections import Counter
from typing import Any

import pytest
from prometheus_client import REGISTRY

from tests.conftest import free_port
from tests.endpoints import Endpoints
from tests.producer_helpers import (
    PEOPLE,
    append,
    change_every_way,
    changes,
    create_table,
    publish,
    read_topic,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_every_change_type_round_trips_to_an_independent_avro_reader(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    change_every_way(spark, delta_path)

    topic = publish(spark, endpoints, delta_path, "id", until_version=4)
    records = read_topic(endpoints, topic)

    assert changes(records, "id", "age") == [
        ("1", 30, "insert", 1),
        ("2", 40, "insert", 1),
        ("3", 50, "insert", 1),
        ("1", 31, "update_postimage", 2),
        ("2", 40, "delete", 3),
        ("3", 51, "update_postimage", 4),
        ("4", 20, "insert", 4),
    ]
    assert all(r.key == {"id": r.value["id"]} for r in records if r.value)
    assert {r.value["_commit_timestamp"].tzinfo is not None for r in records if r.value} == {True}
    published = REGISTRY.get_sample_value(
        "cdfbridge_producer_rows_published_total", {"topic": topic}
    )
    assert published == 7


def test_changes_of_one_key_share_a_partition_in_commit_order(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    from delta.tables import DeltaTable

    create_table(spark, delta_path)
    append(spark, delta_path, [(str(i), "x", i) for i in range(20)])
    table = DeltaTable.forPath(spark, delta_path)
    for age in (100, 200, 300):
        table.update("id = '7'", {"age": str(age)})

    records = read_topic(endpoints, publish(spark, endpoints, delta_path, "id", until_version=4))

    sevens = [r for r in records if r.key == {"id": "7"}]
    assert len({r.partition for r in sevens}) == 1
    assert [r.value["age"] for r in sorted(sevens, key=lambda r: r.offset) if r.value] == [
        7,
        100,
        200,
        300,
    ]


def test_key_deleted_and_reinserted_in_one_commit_orders_delete_first(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    create_table(spark, delta_path)
    append(spark, delta_path, [("1", "old", 1), ("2", "kept", 2)])
    # Overwriting with the same key gives a delete and an insert of it at one version.
    spark.createDataFrame([("1", "new", 10)], PEOPLE).write.format("delta").mode("overwrite").save(
        delta_path
    )

    records = read_topic(endpoints, publish(spark, endpoints, delta_path, "id", until_version=2))

    ones = sorted((r for r in records if r.key == {"id": "1"}), key=lambda r: r.offset)
    assert [
        (r.value["name"], r.value["_change_type"], r.value["_commit_version"])
        for r in ones
        if r.value
    ] == [
        ("old", "insert", 1),
        ("old", "delete", 2),
        ("new", "insert", 2),
    ]


def test_table_written_by_delta_rs_is_published_like_a_spark_one(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    from stack.generate import Generator

    generator = Generator(delta_path, seed=7)
    for operation in ("insert", "update", "merge", "delete"):
        generator.commit(operation, rows=50)

    records = read_topic(endpoints, publish(spark, endpoints, delta_path, "id", until_version=4))

    counts = Counter(
        (r.value["_commit_version"], r.value["_change_type"]) for r in records if r.value
    )
    assert counts == {
        (1, "insert"): 50,
        (2, "update_postimage"): 50,
        (3, "update_postimage"): 25,
        (3, "insert"): 25,
        (4, "delete"): 50,
    }


def test_wide_rows_are_published_in_chunks_bounded_in_bytes(
    spark: Any, endpoints: Endpoints, delta_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    # 20 KB a row: versions 1-3 hold 20 rows (about 400 KiB) each and version 4 holds 60.
    wide = "x" * 20_000
    create_table(spark, delta_path)
    for version in range(1, 4):
        append(spark, delta_path, [(f"{version}-{i}", wide, i) for i in range(20)])
    append(spark, delta_path, [(f"4-{i}", wide, i) for i in range(60)])
    caplog.set_level(logging.INFO, logger="cdfbridge.producer")

    topic = publish(
        spark, endpoints, delta_path, "id", until_version=4, max_bytes_per_chunk=512 * 1024
    )

    published = [json.loads(r.getMessage()) for r in caplog.records if "chunk_published" in r.msg]
    by_version = {event["versions"]: event for event in published}
    # About 25 rows fit in 512 KiB: no two of versions 1-3 share a chunk, and version 4
    # is read in slices within one transaction.
    assert [by_version[v]["rows"] for v in ("1", "2", "3", "4 in 3 slices")] == [20, 20, 20, 60]
    assert all(by_version[v]["mib"] <= 0.5 for v in ("1", "2", "3"))
    records = read_topic(endpoints, topic)
    assert Counter(r.key["id"] for r in records) == Counter(
        [f"{v}-{i}" for v in range(1, 4) for i in range(20)] + [f"4-{i}" for i in range(60)]
    )


def test_tombstones_follow_each_delete_on_its_key_partition(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    change_every_way(spark, delta_path)  # version 3 deletes id 2

    topic = publish(spark, endpoints, delta_path, "id", until_version=4, tombstones=True)
    records = read_topic(endpoints, topic)

    twos = sorted((r for r in records if r.key == {"id": "2"}), key=lambda r: r.offset)
    assert [r.value["_change_type"] if r.value else None for r in twos] == [
        "insert",
        "delete",
        None,
    ]
    assert twos[-1].raw_value is None and len({r.partition for r in twos}) == 1
    assert all(r.value is not None for r in records if r.key != {"id": "2"})


def test_metrics_port_serves_rows_published_and_versions_behind(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    change_every_way(spark, delta_path)
    port = free_port()

    topic = publish(spark, endpoints, delta_path, "id", until_version=3, metrics_port=port)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        exposed = response.read().decode()

    label = f'{{topic="{topic}"}}'
    assert f"cdfbridge_producer_rows_published_total{label} 5.0" in exposed
    assert f"cdfbridge_producer_versions_behind{label} 1.0" in exposed  # head 4, published 3
    assert f"cdfbridge_producer_transaction_seconds_count{label}" in exposed


def test_wide_commit_without_row_metrics_is_counted_then_sliced(
    spark: Any, endpoints: Endpoints, delta_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    create_table(spark, delta_path)
    metrics = "spark.databricks.delta.history.metricsEnabled"
    spark.conf.set(metrics, "false")  # a commit whose history says nothing of its rows
    try:
        append(spark, delta_path, [(str(i), "x" * 20_000, i) for i in range(60)])
    finally:
        spark.conf.unset(metrics)
    caplog.set_level(logging.INFO, logger="cdfbridge.producer")

    topic = publish(
        spark, endpoints, delta_path, "id", until_version=1, max_bytes_per_chunk=512 * 1024
    )

    published = [json.loads(r.getMessage()) for r in caplog.records if "chunk_published" in r.msg]
    assert [(e["versions"], e["rows"]) for e in published if e["rows"]] == [("1 in 3 slices", 60)]
    assert sorted(int(r.key["id"]) for r in read_topic(endpoints, topic)) == list(range(60))
