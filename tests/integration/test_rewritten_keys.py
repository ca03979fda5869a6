"""UPDATE and MERGE that rewrite primary-key columns: the keys a row leaves are deleted at
that commit, in the Python consumer's table and the Kafka engine's alike, with and without
--include-preimage, so ClickHouse holds exactly the Delta table (cdfbridge-verify)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from consumer.cli import main
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env, wait_until_resolved_as
from tests.integration.test_verify import consume
from tests.producer_helpers import changes, publish, read_topic
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]
KEY = "region,id"


def write_rewrites(path: str) -> int:
    """A table keyed by (region, id), written with delta-rs; returns its last version.

    v0 inserts ids 0-199 (region eu for even ids, us for odd);
    v1 moves ids 0-19 to region asia (one column of the key);
    v2 and v3 move ids 20-29 twice (to 1020-1029, then to 2020-2029);
    v4 swaps ids 40 and 42 (both eu) in one MERGE;
    v5 updates a column outside the key; v6 deletes ids 100-109.
    """
    from deltalake import DeltaTable, write_deltalake

    ids = list(range(200))
    write_deltalake(
        path,
        pa.table(
            {
                "region": ["eu" if i % 2 == 0 else "us" for i in ids],
                "id": pa.array(ids, pa.int64()),
                "name": [f"n{i}" for i in ids],
            }
        ),
        configuration={"delta.enableChangeDataFeed": "true"},
    )
    DeltaTable(path).update(updates={"region": "'asia'"}, predicate="id < 20")
    DeltaTable(path).update(updates={"id": "id + 1000"}, predicate="id >= 20 AND id < 30")
    DeltaTable(path).update(updates={"id": "id + 1000"}, predicate="id >= 1000")
    swap = pa.table({"old": pa.array([40, 42], pa.int64()), "new": pa.array([42, 40], pa.int64())})
    (
        DeltaTable(path)
        .merge(swap, "t.region = 'eu' AND t.id = s.old", source_alias="s", target_alias="t")
        .when_matched_update(updates={"id": "s.new"})
        .execute()
    )
    DeltaTable(path).update(updates={"name": "'renamed'"}, predicate="id >= 150")
    DeltaTable(path).delete("id >= 100 AND id < 110")
    return DeltaTable(path).version()


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    path = str(Path(tmp_path_factory.mktemp("rewrites")) / "accounts")
    return path, write_rewrites(path)


def current_keys(clickhouse: Any, database: str, table: str) -> set[tuple[str, int]]:
    rows = clickhouse.query(f"SELECT region, id FROM `{database}`.`{table}_current`").result_rows
    return {(region, int(i)) for region, i in rows}


@pytest.mark.parametrize("include_preimage", [False, True], ids=["default", "include-preimage"])
def test_rewritten_keys_leave_no_old_key_in_either_consumers_table(
    rewritten: tuple[str, int],
    include_preimage: bool,
    spark: Any,
    endpoints: Endpoints,
    clickhouse: Any,
    ch_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deltalake import DeltaTable

    path, last = rewritten
    topic = publish(
        spark, endpoints, path, KEY, until_version=last, include_preimage=include_preimage
    )
    settings = consume(endpoints, path, topic, ch_database, table="by_python")
    consumer_env(monkeypatch, endpoints, ch_database)
    ddl = ["--topic", topic, "--group", unique("engine"), "--table", "by_kafka"]
    assert main([*ddl, "kafka-engine-ddl", "--apply"]) == 0
    wait_until_resolved_as(clickhouse, ch_database, "by_kafka", "by_python", "region, id, name")

    report = verify(settings)
    delta = DeltaTable(path).to_pyarrow_table().select(["region", "id"]).to_pylist()
    expected = {(row["region"], row["id"]) for row in delta}
    assert report.equal, report.render()
    assert current_keys(clickhouse, ch_database, "by_python") == expected
    assert current_keys(clickhouse, ch_database, "by_kafka") == expected
    assert ("eu", 0) not in expected and ("asia", 0) in expected  # moved, not copied
    assert {("eu", 40), ("eu", 42)} <= expected  # swapped: both keys live


def test_a_subscriber_sees_a_delete_of_the_old_key_and_the_postimage_of_the_new(
    rewritten: tuple[str, int], spark: Any, endpoints: Endpoints
) -> None:
    path, last = rewritten
    topic = publish(spark, endpoints, path, KEY, until_version=last)

    seen = changes(read_topic(endpoints, topic), "region", "id")

    moved_twice = {row for row in seen if row[1] in (20, 1020, 2020)}
    assert moved_twice == {
        ("eu", 20, "insert", 0),
        ("eu", 20, "delete", 2),
        ("eu", 1020, "update_postimage", 2),
        ("eu", 1020, "delete", 3),
        ("eu", 2020, "update_postimage", 3),
        ("eu", 2020, "update_postimage", 5),  # v5 renames ids from 150 on: the key stays
    }
    # The swap and the update outside the key keep their keys: postimages alone.
    assert [row for row in seen if row[1] in (40, 42) and row[3] == 4] == [
        ("eu", 40, "update_postimage", 4),
        ("eu", 42, "update_postimage", 4),
    ]
    assert not [row for row in seen if row[3] == 5 and row[2] != "update_postimage"]
