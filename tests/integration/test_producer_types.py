"""Every Delta type survives the wire: decoded by confluent-kafka and by ClickHouse."""

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from consumer.group.sink import insert_sql
from schemas.clickhouse import columns, input_columns, quote
from schemas.target import Target
from tests.endpoints import Endpoints
from tests.producer_helpers import create_table, publish, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COLUMNS = """id STRING, b TINYINT, s SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE,
 dec DECIMAL(18,4), bin BINARY, dt DATE, ts TIMESTAMP, tsn TIMESTAMP_NTZ, ok BOOLEAN,
 arr ARRAY<BIGINT>, m MAP<STRING, DOUBLE>, st STRUCT<a: INT, b: STRING>,
 nested ARRAY<STRUCT<x: INT, tags: ARRAY<STRING>>>"""
FULL = """('k1', 1, 2, 3, 4, 1.5, 2.5, 12.3456, X'0102', DATE'2024-01-02',
 TIMESTAMP'2024-01-02 03:04:05.123456', TIMESTAMP_NTZ'2024-01-02 03:04:05.5', true,
 array(1, 2), map('a', 1.0), named_struct('a', 1, 'b', 'x'),
 array(named_struct('x', 5, 'tags', array('t'))))"""
NULLS = "('k2'" + ", NULL" * 16 + ")"
# The narrow integers' extremes, and a struct that is there but holds only NULLs.
EDGES = "('k3', -128, 32767" + ", NULL" * 12 + ", named_struct('a', NULL, 'b', NULL), NULL)"


@pytest.fixture(scope="module")
def published(spark: Any, endpoints: Endpoints, tmp_path_factory: Any) -> tuple[str, list[Any]]:
    path = str(tmp_path_factory.mktemp("types") / "t")
    create_table(spark, path, COLUMNS)
    spark.sql(f"INSERT INTO delta.`{path}` VALUES {FULL}, {NULLS}, {EDGES}")
    topic = publish(spark, endpoints, path, "id", until_version=1)
    records = sorted(read_topic(endpoints, topic), key=lambda r: r.key["id"])
    return topic, records


def test_avro_deserializer_reads_every_type_back(published: tuple[str, list[Any]]) -> None:
    full, nulls, _ = (r.value for r in published[1])

    assert {k: v for k, v in full.items() if not k.startswith("_")} == {
        "id": "k1",
        "b": 1,
        "s": 2,
        "i": 3,
        "l": 4,
        "f": 1.5,
        "d": 2.5,
        "dec": Decimal("12.3456"),
        "bin": b"\x01\x02",
        "dt": dt.date(2024, 1, 2),
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC),
        "tsn": dt.datetime(2024, 1, 2, 3, 4, 5, 500000),
        "ok": True,
        "arr": [1, 2],
        "m": {"a": 1.0},
        "st": {"a": 1, "b": "x"},
        "nested": [{"x": 5, "tags": ["t"]}],
    }
    assert {k for k, v in nulls.items() if v is not None} == {
        "id",
        "_change_type",
        "_commit_version",
        "_commit_timestamp",
        "_generation",
    }


def test_clickhouse_reads_the_same_messages_into_the_mapped_column_types(
    published: tuple[str, list[Any]],
    registry: Any,
    clickhouse: Any,
    ch_database: str,
    endpoints: Endpoints,
) -> None:
    import json

    topic, records = published
    schema = json.loads(registry.get_latest_version(f"{topic}-value").schema.schema_str)
    target = Target(ch_database, "types")
    table = target.name
    definition = ", ".join(f"{quote(name)} {kind}" for name, kind in columns(schema))
    clickhouse.command(f"CREATE TABLE {table} ({definition}) ENGINE = MergeTree ORDER BY id")

    clickhouse.command(  # as the consumer inserts
        insert_sql(target, input_columns(schema)),
        data=b"".join(r.raw_value for r in records),
        settings={"format_avro_schema_registry_url": endpoints.registry_for_clickhouse},
    )

    row = clickhouse.query(
        f"SELECT toString(dec), toString(ts), toString(tsn), dt, m, st.b, nested[1].tags, bin "
        f"FROM {table} WHERE id = 'k1'"
    ).result_rows[0]
    assert row == (
        "12.3456",
        "2024-01-02 03:04:05.123456",
        "2024-01-02 03:04:05.500000",
        dt.date(2024, 1, 2),
        {"a": 1.0},
        "x",
        ["t"],
        b"\x01\x02".decode(),
    )
    nulls = clickhouse.query(f"SELECT l, dec, ts, arr FROM {table} WHERE id = 'k2'").result_rows
    assert nulls == [(None, None, None, [])]
    narrow = "SELECT id, toTypeName(b), b, toTypeName(s), s, st IS NULL, toString(st)"
    assert clickhouse.query(f"{narrow} FROM {table} ORDER BY id").result_rows == [
        ("k1", "Nullable(Int8)", 1, "Nullable(Int16)", 2, 0, "(1,'x')"),
        ("k2", "Nullable(Int8)", None, "Nullable(Int16)", None, 1, None),
        ("k3", "Nullable(Int8)", -128, "Nullable(Int16)", 32767, 0, "(NULL,NULL)"),
    ]
