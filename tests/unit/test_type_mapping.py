"""One row per Delta type: its Avro type on the wire and its ClickHouse column type."""

from typing import Any

import pytest

from schemas.avro import SchemaMappingError, avro_type, key_schema, value_schema
from schemas.clickhouse import clickhouse_type, columns

STRUCT = {
    "type": "struct",
    "fields": [
        {"name": "a", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "b", "type": "string", "nullable": True, "metadata": {}},
    ],
}

CASES: list[tuple[str, Any, Any, str]] = [
    ("boolean", "boolean", "boolean", "Bool"),
    ("byte", "byte", {"type": "int", "connect.type": "int8"}, "Int8"),
    ("short", "short", {"type": "int", "connect.type": "int16"}, "Int16"),
    ("int", "integer", "int", "Int32"),
    ("long", "long", "long", "Int64"),
    ("float", "float", "float", "Float32"),
    ("double", "double", "double", "Float64"),
    (
        "decimal",
        "decimal(18,4)",
        {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 4},
        "Decimal(18, 4)",
    ),
    ("string", "string", "string", "String"),
    ("binary", "binary", "bytes", "String"),
    ("date", "date", {"type": "int", "logicalType": "date"}, "Date32"),
    (
        "timestamp",
        "timestamp",
        {"type": "long", "logicalType": "timestamp-micros"},
        "DateTime64(6, 'UTC')",
    ),
    (
        "timestamp_ntz",
        "timestamp_ntz",
        {"type": "long", "logicalType": "local-timestamp-micros"},
        "DateTime64(6)",
    ),
    (
        "array",
        {"type": "array", "elementType": "long", "containsNull": False},
        {"type": "array", "items": "long"},
        "Array(Int64)",
    ),
    (
        "array of nullable",
        {"type": "array", "elementType": "string", "containsNull": True},
        {"type": "array", "items": ["null", "string"]},
        "Array(Nullable(String))",
    ),
    (
        "map",
        {"type": "map", "keyType": "string", "valueType": "double", "valueContainsNull": True},
        {"type": "map", "values": ["null", "double"]},
        "Map(String, Nullable(Float64))",
    ),
    (
        "struct",
        STRUCT,
        {
            "type": "record",
            "name": "col_record",
            "fields": [
                {"name": "a", "type": "int"},
                {"name": "b", "type": ["null", "string"], "default": None},
            ],
        },
        "Tuple(`a` Int32, `b` Nullable(String))",
    ),
    (
        "nullable struct",
        {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True}]},
        {
            "type": "record",
            "name": "col_record",
            "fields": [{"name": "a", "type": ["null", "long"], "default": None}],
        },
        "Tuple(`a` Nullable(Int64))",
    ),
    (
        "nested struct in array",
        {"type": "array", "elementType": STRUCT, "containsNull": False},
        {
            "type": "array",
            "items": {
                "type": "record",
                "name": "col_item_record",
                "fields": [
                    {"name": "a", "type": "int"},
                    {"name": "b", "type": ["null", "string"], "default": None},
                ],
            },
        },
        "Array(Tuple(`a` Int32, `b` Nullable(String)))",
    ),
]


@pytest.mark.parametrize(
    ("delta", "avro", "clickhouse"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_delta_type_maps_to_avro_and_clickhouse(delta: Any, avro: Any, clickhouse: str) -> None:
    assert avro_type(delta, "col") == avro
    assert clickhouse_type(avro) == clickhouse


@pytest.mark.parametrize(
    ("avro", "clickhouse"),
    [
        (["null", "long"], "Nullable(Int64)"),
        (["null", {"type": "array", "items": "long"}], "Array(Int64)"),
        (["null", {"type": "map", "values": "long"}], "Map(String, Int64)"),
        (
            ["null", {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]}],
            "Nullable(Tuple(`a` Int32))",
        ),
    ],
)
def test_nullability_is_preserved_where_clickhouse_allows_it(avro: Any, clickhouse: str) -> None:
    assert clickhouse_type(avro) == clickhouse


def test_a_null_struct_is_a_tuple_of_defaults_on_servers_without_nullable_tuple() -> None:
    record = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]}

    assert clickhouse_type(["null", record], nullable_tuple=False) == "Tuple(`a` Int32)"


def table(*fields: tuple[str, Any, bool]) -> dict[str, Any]:
    return {
        "type": "struct",
        "fields": [
            {"name": n, "type": t, "nullable": null, "metadata": {}} for n, t, null in fields
        ],
    }


def test_value_schema_has_table_columns_then_change_metadata() -> None:
    schema = value_schema(table(("id", "string", False), ("age", "long", True)), "cdfbridge.people")

    assert schema["name"] == "cdfbridge_people_value"
    assert [(f["name"], f["type"]) for f in schema["fields"]] == [
        ("id", "string"),
        ("age", ["null", "long"]),
        ("_change_type", "string"),
        ("_commit_version", "long"),
        ("_commit_timestamp", {"type": "long", "logicalType": "timestamp-micros"}),
        ("_generation", "long"),
    ]
    assert columns(schema)[-4:] == [
        ("_change_type", "String"),
        ("_commit_version", "Int64"),
        ("_commit_timestamp", "DateTime64(6, 'UTC')"),
        ("_generation", "Int64"),
    ]


def test_a_generation_started_before_values_had_it_keeps_their_shape() -> None:
    schema = value_schema(table(("id", "string", False)), "t", generation=False)

    assert [f["name"] for f in schema["fields"]][-1] == "_commit_timestamp"


def test_value_schema_declares_key_columns_never_null() -> None:
    schema = value_schema(table(("id", "string", True), ("age", "long", True)), "t", ["id"])

    assert [f["type"] for f in schema["fields"][:2]] == ["string", ["null", "long"]]


def test_key_schema_holds_primary_key_columns_in_order_and_never_null() -> None:
    schema = key_schema(table(("a", "string", True), ("b", "long", True)), ["b", "a"], "t")

    assert [(f["name"], f["type"]) for f in schema["fields"]] == [("b", "long"), ("a", "string")]


def test_missing_primary_key_column_is_named_with_the_fix() -> None:
    with pytest.raises(SchemaMappingError, match=r"\['nope'\].*--primary-key"):
        key_schema(table(("id", "string", False)), ["nope"], "t")


@pytest.mark.parametrize(
    ("delta", "message"),
    [
        (
            {"type": "map", "keyType": "long", "valueType": "long", "valueContainsNull": False},
            "string keys",
        ),
        ("interval", "no Avro mapping"),
    ],
)
def test_unmappable_types_fail_with_the_column_named(delta: Any, message: str) -> None:
    with pytest.raises(SchemaMappingError, match=f"col.*{message}"):
        avro_type(delta, "col")


def test_column_named_like_metadata_is_rejected() -> None:
    with pytest.raises(SchemaMappingError, match="_commit_version"):
        value_schema(table(("_commit_version", "long", False)), "t")
