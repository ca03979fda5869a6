"""Any Delta column name gets one valid Avro name; ClickHouse keeps the Delta name."""

import re
from typing import Any

import pytest

from consumer.group.sink import insert_sql
from consumer.kafka_engine.ddl import KafkaSource, statements
from schemas.avro import value_schema
from schemas.avro_names import avro_name, decode, delta_name, renamed
from schemas.clickhouse import columns, input_columns
from schemas.target import Target

AVRO_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
AWKWARD = [
    "order-id",
    "größe",
    "2nd_value",
    "first name",
    "amount (eur)",
    "select",
    "from",
    "MixedCase",
    "_u_looks_escaped",
    "_u_order_2d_id",  # what `order-id` becomes: must not collide with it
    "a.b",
    "日本",
    "",
]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("order_id", "order_id"),
        ("select", "select"),
        ("MixedCase", "MixedCase"),
        ("order-id", "_u_order_2d_id"),
        ("größe", "_u_gr_f6__df_e"),
        ("2nd_value", "_u_2nd_5f_value"),
        ("amount (eur)", "_u_amount_20__28_eur_29_"),
    ],
)
def test_the_documented_examples(name: str, expected: str) -> None:
    assert avro_name(name) == expected


def test_every_name_maps_to_a_valid_avro_name_that_decodes_back_without_collisions() -> None:
    mapped = [avro_name(name) for name in AWKWARD]

    assert all(AVRO_NAME.match(m) for m in mapped), mapped
    assert [decode(m) for m in mapped] == AWKWARD
    assert len(set(mapped)) == len(AWKWARD)


def awkward_table() -> dict[str, Any]:
    inner = {
        "type": "struct",
        "fields": [
            {"name": "zip-code", "type": "string", "nullable": True, "metadata": {}},
            {"name": "city", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    return {
        "type": "struct",
        "fields": [
            {"name": "order-id", "type": "long", "nullable": False, "metadata": {}},
            {"name": "select", "type": "string", "nullable": True, "metadata": {}},
            {"name": "Straße", "type": inner, "nullable": True, "metadata": {}},
        ],
    }


def test_the_value_schema_keeps_each_delta_name_in_a_field_property() -> None:
    schema = value_schema(awkward_table(), "t", ["order-id"])
    order, select, street = schema["fields"][:3]

    assert (order["name"], delta_name(order)) == ("_u_order_2d_id", "order-id")
    assert (select["name"], "delta.name" in select) == ("select", False)
    assert [f["name"] for f in street["type"][1]["fields"]] == ["_u_zip_2d_code", "city"]
    assert renamed(awkward_table())["fields"][2]["type"]["fields"][0]["name"] == "_u_zip_2d_code"


def test_clickhouse_columns_carry_delta_names_and_inserts_read_avro_names() -> None:
    schema = value_schema(awkward_table(), "t", ["order-id"])

    assert columns(schema)[:3] == [
        ("order-id", "Int64"),
        ("select", "Nullable(String)"),
        ("Straße", "Nullable(Tuple(`zip-code` Nullable(String), `city` Nullable(String)))"),
    ]
    sql = insert_sql(Target("db", "t"), input_columns(schema)[:3])
    assert sql == (
        "INSERT INTO `db`.`t` (`order-id`, `select`, `Straße`) SELECT `_u_order_2d_id`, "
        "`select`, CAST(`_u_Stra_df_e`, 'Nullable(Tuple(Nullable(String), Nullable(String)))') "
        "FROM input('`_u_order_2d_id` Int64, `select` Nullable(String), `_u_Stra_df_e` "
        "Nullable(Tuple(`_u_zip_2d_code` Nullable(String), `city` Nullable(String)))') "
        "FORMAT AvroConfluent"
    )


def test_the_kafka_table_reads_avro_names_and_its_view_writes_delta_names() -> None:
    schema = value_schema(awkward_table(), "t", ["order-id"])
    source = KafkaSource("kafka:9092", "t", "g", "http://registry")
    ddl = statements(
        Target("db", "t"), columns(schema), input_columns(schema), ["order-id"], 0, source
    )

    assert "`_u_order_2d_id` Int64" in ddl[3]
    assert "SELECT `_u_order_2d_id` AS `order-id`, `select`, CAST(`_u_Stra_df_e`" in ddl[4]
