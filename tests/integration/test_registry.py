"""The schema registry speaks the Confluent API, to confluent-kafka and to ClickHouse."""

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration

ROW = {
    "type": "record",
    "name": "Row",
    "fields": [{"name": "id", "type": "string"}, {"name": "age", "type": "long"}],
}


def test_registered_schema_is_fetched_by_id(registry: Any) -> None:
    subject = f"{unique('subject')}-value"

    schema_id = registry.register_schema(subject, Schema(json.dumps(ROW), "AVRO"))
    fetched = registry.get_schema(schema_id)

    assert json.loads(fetched.schema_str) == ROW
    assert registry.get_latest_version(subject).schema_id == schema_id


def test_clickhouse_avroconfluent_decodes_serializer_output_via_registry(
    registry: Any, endpoints: Endpoints, clickhouse: Any, ch_database: str
) -> None:
    topic = unique("topic")
    serialize = AvroSerializer(registry, json.dumps(ROW))
    context = SerializationContext(topic, MessageField.VALUE)
    framed = [serialize({"id": f"k{i}", "age": i}, context) for i in range(3)]
    table = f"`{ch_database}`.`rows`"
    clickhouse.command(f"CREATE TABLE {table} (id String, age Int64) ENGINE = Memory")

    clickhouse.raw_insert(
        table,
        insert_block=b"".join(framed),
        fmt="AvroConfluent",
        settings={"format_avro_schema_registry_url": endpoints.registry_for_clickhouse},
    )

    rows = clickhouse.query(f"SELECT id, age FROM {table} ORDER BY age").result_rows
    assert rows == [("k0", 0), ("k1", 1), ("k2", 2)]
