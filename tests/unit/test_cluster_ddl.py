"""The DDL of a target on a cluster with Keeper, read back by ClickHouse's own parser
(`formatQuery`, in-process through chdb): ON CLUSTER everywhere, the rows in a
ReplicatedReplacingMergeTree at the server's default replica path on each shard, a
Distributed table of the target's name sharded by the primary key, and the Kafka engine's
view writing into the Distributed table; without Keeper, the same tables with no ON CLUSTER
and no replication."""

from __future__ import annotations

import pytest

from consumer.kafka_engine.ddl import KafkaSource, statements
from schemas.clickhouse import InputColumn, literal
from schemas.target import Target

SOURCE = KafkaSource("kafka:9092", "cdfbridge.orders", "orders-ch", "http://registry:8080")


def _formatted(statement: str) -> str:
    """The statement as ClickHouse parses and prints it; a ValueError if it cannot parse."""
    import chdb

    try:
        found = chdb.query(f"SELECT formatQuery({literal(statement)})", "TSVRaw")  # type: ignore[no-untyped-call]
        return str(found).strip()
    except Exception as exc:  # noqa: BLE001 - chdb raises its own RuntimeError subclass
        raise ValueError(f"ClickHouse cannot parse: {statement}\n{exc}") from exc


def _statements(keeper: bool = True) -> list[str]:
    return statements(
        Target("db", "orders", "main"),
        [("region", "String"), ("id", "Int64"), ("_change_type", "String")],
        [
            InputColumn("region", "region", "String", "`region`"),
            InputColumn("id", "id", "Int64", "`id`"),
            InputColumn("_change_type", "_change_type", "String", "`_change_type`"),
        ],
        ["region", "id", "day"],
        100,
        SOURCE,
        shard_by=["region", "id"],
        keeper=keeper,
    )


@pytest.fixture(scope="module")
def ddl() -> list[str]:
    return [_formatted(statement) for statement in _statements()]


def test_every_statement_parses_and_names_the_cluster(ddl: list[str]) -> None:
    assert len(ddl) == 7
    for statement in ddl:
        first_line = statement.splitlines()[0]
        assert " ON CLUSTER main" in first_line, first_line


def test_each_shard_stores_rows_in_a_replicated_table_at_the_default_replica_path(
    ddl: list[str],
) -> None:
    local = ddl[0]
    assert local.startswith("CREATE TABLE IF NOT EXISTS db.orders_local ON CLUSTER main")
    assert "ENGINE = ReplicatedReplacingMergeTree(_version, _is_deleted)" in local
    assert "replicated_deduplication_window = 100" in local
    assert "non_replicated" not in local


def test_the_target_is_a_distributed_table_sharded_by_the_primary_key_alone(
    ddl: list[str],
) -> None:
    """Not by the ORDER BY, which may hold more columns: a key's changes all reach one shard."""
    assert ddl[1] == (
        "CREATE TABLE IF NOT EXISTS db.orders ON CLUSTER main AS db.orders_local\n"
        "ENGINE = Distributed('main', 'db', 'orders_local', cityHash64(region, id))"
    )
    assert "FROM db.orders\nFINAL" in ddl[2] or "FROM db.orders FINAL" in ddl[2]


def test_the_kafka_engine_writes_into_the_distributed_table(ddl: list[str]) -> None:
    view = ddl[5]
    assert view.startswith("CREATE MATERIALIZED VIEW IF NOT EXISTS db.orders_kafka_mv")
    assert "TO db.orders\n" in view


def test_a_statement_clickhouse_cannot_parse_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot parse"):
        _formatted("CREATE TABLE db.t ON CLUSTER (x Int8) ENGINE = Distributed(")


def test_without_keeper_the_same_tables_are_made_server_by_server() -> None:
    """No ON CLUSTER and no replication: the statements to run on each of node_urls."""
    ddl = [_formatted(statement) for statement in _statements(keeper=False)]
    assert len(ddl) == 7
    assert not [statement for statement in ddl if "ON CLUSTER" in statement]
    assert "ENGINE = ReplacingMergeTree(_version, _is_deleted)" in ddl[0]
    assert ddl[1] == (
        "CREATE TABLE IF NOT EXISTS db.orders AS db.orders_local\n"
        "ENGINE = Distributed('main', 'db', 'orders_local', cityHash64(region, id))"
    )
