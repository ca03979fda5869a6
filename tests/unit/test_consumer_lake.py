"""One row per case: how ClickHouse is told to read a Delta table (secrets as query
parameters only), which partitions lack history a reader needs, hashed columns and NULL
structs in SQL, and where a partition starts after a bootstrap or a rebuild."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from consumer.group.history import Gap, gaps
from schemas.progress import Generation
from services.group_positions import PartitionOffsets
from services.lake import LakeUnreadableError, lake_column, locate
from services.lake_structs import ambiguous
from services.storage import StorageSettings

MINIO = StorageSettings(
    endpoint="http://127.0.0.1:9300",
    path_style_access=True,
    allow_http=True,
    access_key_id=SecretStr("key-id"),
    secret_access_key=SecretStr("very-secret"),
)


@pytest.mark.parametrize(
    ("location", "storage", "function", "root"),
    [
        ("/lake/orders", StorageSettings(), "deltaLakeLocal", "/lake/orders/"),
        ("file:///lake/my%20orders/", StorageSettings(), "deltaLakeLocal", "/lake/my orders/"),
        ("s3a://bucket/t/orders", MINIO, "deltaLake", "http://127.0.0.1:9300/bucket/t/orders/"),
        (
            "s3://bucket/orders",
            StorageSettings(region="eu-west-1"),
            "deltaLake",
            "https://bucket.s3.eu-west-1.amazonaws.com/orders/",
        ),
        (
            "s3://bucket/orders",
            StorageSettings(endpoint="https://s3.example.com"),
            "deltaLake",
            "https://bucket.s3.example.com/orders/",
        ),
    ],
)
def test_locations_clickhouse_reads(
    location: str, storage: StorageSettings, function: str, root: str
) -> None:
    table = locate(location, storage)
    assert (table.function, table.root) == (function, root)
    assert table.query_parameters(3)["lake_commit"] == f"{root}_delta_log/{3:020d}.json"


def test_credentials_are_query_parameters_never_statement_text() -> None:
    table = locate("s3a://bucket/orders", MINIO)
    text = table.table_sql() + table.log_file_sql(7)
    assert "very-secret" not in text and "key-id" not in text
    assert (
        table.table_sql()
        == "deltaLake({lake_root:String}, {lake_key_id:String}, {lake_secret:String})"
    )
    assert table.query_parameters(7)["lake_secret"] == "very-secret"
    assert "very-secret" not in repr(table)


@pytest.mark.parametrize(
    "location", ["abfss://c@account.dfs.core.windows.net/t", "main.sales.orders", "gs://b/t"]
)
def test_locations_clickhouse_cannot_read_are_refused_naming_the_topic_path(location: str) -> None:
    with pytest.raises(LakeUnreadableError, match="rebuild --from-topic"):
        locate(location, StorageSettings())


def _at(partition: int, committed: int, low: int) -> PartitionOffsets:
    return PartitionOffsets(partition, committed, low, high=100)


@pytest.mark.parametrize(
    ("found", "generation", "expected"),
    [
        ([_at(0, -1001, 0)], Generation(), []),  # a new group, history whole
        ([_at(0, -1001, 5)], Generation(), [Gap(0, 0, 5)]),  # a new group, start deleted
        ([_at(0, -1001, 5)], Generation(1, {0: 7}), []),  # only older generations deleted
        ([_at(0, -1001, 9)], Generation(1, {0: 7}), [Gap(0, 7, 9)]),
        ([_at(0, 12, 9)], Generation(1, {0: 7}), []),  # a group with offsets it still finds
        ([_at(0, 8, 9), _at(1, 50, 9)], Generation(), [Gap(0, 8, 9)]),  # offline too long
    ],
)
def test_history_gaps(
    found: list[PartitionOffsets], generation: Generation, expected: list[Gap]
) -> None:
    assert gaps(found, generation) == expected


@pytest.mark.parametrize(
    ("kind", "hashed", "sql"),
    [
        ("Nullable(String)", False, "`email`"),
        ("Nullable(String)", True, "lower(hex(SHA256(`email`)))"),
        ("Nullable(Int64)", True, "lower(hex(SHA256(toString(`email`))))"),
        ("Int16", True, "lower(hex(SHA256(toString(`email`))))"),
    ],
)
def test_hashed_columns_as_the_producer_hashes_them(kind: str, hashed: bool, sql: str) -> None:
    assert lake_column("email", kind, hashed) == sql


@pytest.mark.parametrize(
    ("kind", "value", "unclear"),
    [
        ("Nullable(Tuple(a Nullable(Int32), m Map(String, Int32)))", "(NULL, map())", 1),
        ("Nullable(Tuple(a Nullable(Int32), m Map(String, Int32)))", "(1, map())", 0),
        (
            "Array(Nullable(Tuple(x Nullable(Int32), t Array(String))))",
            "[(1, ['a']), (NULL, [])]",
            1,
        ),
        ("Array(Nullable(Tuple(x Nullable(Int32), t Array(String))))", "[(1, ['a'])]", 0),
        (
            "Tuple(a Array(Nullable(Tuple(b Nullable(Tuple(c Int32))))))",
            "tuple([tuple(tuple(0))])",
            1,
        ),
        (
            "Tuple(a Array(Nullable(Tuple(b Nullable(Tuple(c Int32))))))",
            "tuple([tuple(tuple(5))])",
            0,
        ),
        ("Map(String, Nullable(Tuple(c Nullable(Int32))))", "map('k', tuple(NULL))", 1),
        ("Map(String, Nullable(Tuple(c Nullable(Int32))))", "map('k', tuple(1))", 0),
    ],
)
def test_a_struct_that_may_have_been_null_is_found_at_any_depth(
    kind: str, value: str, unclear: int
) -> None:
    """Evaluated by ClickHouse's own engine (chdb, in process)."""
    import chdb

    condition = ambiguous("v", kind)
    query = (
        f"SELECT countIf({condition}) FROM (SELECT CAST({value}, '{kind}') AS v) "  # noqa: S608
        "SETTINGS enable_nullable_tuple_type = 1, allow_experimental_nullable_tuple_type = 1"
    )
    assert int(str(chdb.query(query, "CSV")).strip()) == unclear  # type: ignore[no-untyped-call]


def test_types_without_a_nullable_struct_need_no_check() -> None:
    for kind in ("String", "Nullable(Int64)", "Array(Tuple(a Int32))", "Map(String, Float64)"):
        assert ambiguous("v", kind) == ""


def test_a_partition_starts_where_a_rebuild_left_off_else_at_its_generation() -> None:
    from confluent_kafka import TopicPartition

    from consumer.group.rebalance import Rebalance

    rebalance = Rebalance()
    rebalance.first, rebalance.moved = {0: 10, 1: 20}, {1: 55, 2: 70}

    assert rebalance.start_of(TopicPartition("t", 0, -1001)) == 10  # no offset: the generation's
    assert rebalance.start_of(TopicPartition("t", 0, 42)) is None  # its own committed offset
    assert rebalance.start_of(TopicPartition("t", 1, 42)) == 55  # moved, whatever it committed
    assert rebalance.start_of(TopicPartition("t", 1, 42)) is None  # moved once only
    assert rebalance.start_of(TopicPartition("t", 2, -1001)) == 70


def test_a_partition_below_what_its_table_holds_starts_there() -> None:
    from confluent_kafka import TopicPartition

    from consumer.group.rebalance import Rebalance

    rebalance = Rebalance()
    rebalance.first, rebalance.floor = {0: 10}, {0: 30, 1: 40}

    assert (
        rebalance.start_of(TopicPartition("t", 0, -1001)) == 30
    )  # the generation's start is older
    assert rebalance.start_of(TopicPartition("t", 1, 12)) == 40  # an older generation's offset
    assert rebalance.start_of(TopicPartition("t", 1, 40)) is None  # at it: its own
    assert rebalance.start_of(TopicPartition("t", 1, 90)) is None  # past it: its own
    assert rebalance.start_of(TopicPartition("t", 2, 5)) is None  # no floor
