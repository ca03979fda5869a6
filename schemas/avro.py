"""Delta table schema → Avro key and value schemas.

Input is the schema as Delta stores it (Spark's StructType JSON: `{"type": "struct",
"fields": [{"name", "type", "nullable", "metadata"}]}`), so the producer and delta-rs
tables map the same way without a JVM.

| Delta type        | Avro type                                          |
| ----------------- | -------------------------------------------------- |
| boolean           | boolean                                            |
| byte, short       | int, connect.type int8, int16 (Kafka Connect's hint) |
| int               | int                                                |
| long              | long                                               |
| float, double     | float, double                                      |
| decimal(p,s)      | bytes, logicalType decimal, precision p, scale s   |
| string            | string                                             |
| binary            | bytes                                              |
| date              | int, logicalType date                              |
| timestamp         | long, logicalType timestamp-micros (UTC instant)   |
| timestamp_ntz     | long, logicalType local-timestamp-micros           |
| array<T>          | array of T                                         |
| map<string,T>     | map of T (Avro map keys are strings)               |
| struct<...>       | record, named after its path                       |
| nullable T        | ["null", T] with default null                      |

Field names follow schemas.avro_names: any Delta name gets a valid Avro name, and the field
keeps the Delta name in its `delta.name` property when the two differ.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from schemas.avro_names import ORIGINAL, avro_name
from schemas.changes import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    GENERATION,
    METADATA_COLUMNS,
)
from schemas.errors import TerminalError

AvroSchema = Any  # a JSON-shaped Avro schema: str, dict or list
NAMESPACE = "cdfbridge"

_PRIMITIVES: dict[str, AvroSchema] = {
    "boolean": "boolean",
    "byte": {"type": "int", "connect.type": "int8"},
    "short": {"type": "int", "connect.type": "int16"},
    "integer": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "bytes",
    "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},
    "timestamp_ntz": {"type": "long", "logicalType": "local-timestamp-micros"},
}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


class SchemaMappingError(TerminalError):
    """A Delta schema that Avro (or this contract) cannot represent."""


def avro_type(delta_type: Any, path: str) -> AvroSchema:
    """Avro schema of one Delta type; path names nested records uniquely."""
    if isinstance(delta_type, str):
        if delta_type in _PRIMITIVES:
            return _PRIMITIVES[delta_type]
        match = _DECIMAL.match(delta_type)
        if match:
            precision, scale = int(match[1]), int(match[2])
            return {
                "type": "bytes",
                "logicalType": "decimal",
                "precision": precision,
                "scale": scale,
            }
        raise SchemaMappingError(f"column {path} has type {delta_type}, which has no Avro mapping")
    kind = delta_type.get("type")
    if kind == "struct":
        return _record(f"{path}_record", delta_type["fields"], path)
    if kind == "array":
        items = avro_type(delta_type["elementType"], f"{path}_item")
        return {"type": "array", "items": _nullable(items, delta_type["containsNull"])}
    if kind == "map":
        if delta_type["keyType"] != "string":
            raise SchemaMappingError(
                f"column {path} is a map with {delta_type['keyType']} keys; Avro maps need string "
                "keys: cast the keys to string in the table"
            )
        values = avro_type(delta_type["valueType"], f"{path}_value")
        return {"type": "map", "values": _nullable(values, delta_type["valueContainsNull"])}
    raise SchemaMappingError(f"column {path} has type {delta_type}, which has no Avro mapping")


def value_schema(
    table_schema: dict[str, Any],
    name: str,
    primary_key: Sequence[str] = (),
    generation: bool = True,
) -> dict[str, Any]:
    """The value record: every table column, then _change_type, _commit_version,
    _commit_timestamp and (unless `generation` is false: a generation started before values
    had it, schemas/changes.py) _generation. Key columns are never null, here as in the key:
    a ClickHouse sorting key cannot be Nullable."""
    columns = [
        {**f, "nullable": False} if f["name"] in primary_key else f for f in table_schema["fields"]
    ]
    clash = sorted({f["name"] for f in columns} & set(METADATA_COLUMNS))
    if clash:
        raise SchemaMappingError(f"table columns {clash} clash with cdfbridge's metadata columns")
    fields = [*columns]
    fields += [
        {"name": CHANGE_TYPE, "type": "string", "nullable": False},
        {"name": COMMIT_VERSION, "type": "long", "nullable": False},
        {"name": COMMIT_TIMESTAMP, "type": "timestamp", "nullable": False},
    ]
    if generation:
        fields.append({"name": GENERATION, "type": "long", "nullable": False})
    return _record(f"{_avro_name(name)}_value", fields, "", namespace=NAMESPACE)


def key_schema(
    table_schema: dict[str, Any], primary_key: Sequence[str], name: str
) -> dict[str, Any]:
    """The key record: the primary-key columns in the given order, never null."""
    by_name = {f["name"]: f for f in table_schema["fields"]}
    missing = [column for column in primary_key if column not in by_name]
    if missing:
        raise SchemaMappingError(
            f"primary-key column(s) {missing} are not in the table; its columns are "
            f"{sorted(by_name)}: fix --primary-key"
        )
    if not primary_key:
        raise SchemaMappingError("no primary key given: pass --primary-key col[,col...]")
    fields = [{**by_name[column], "nullable": False} for column in primary_key]
    return _record(f"{_avro_name(name)}_key", fields, "", namespace=NAMESPACE)


def _record(
    name: str, fields: Sequence[dict[str, Any]], path: str, namespace: str | None = None
) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "record", "name": _avro_name(name)}
    if namespace:
        record["namespace"] = namespace
    record["fields"] = [_field(f, path) for f in fields]
    return record


def _field(field: dict[str, Any], parent: str) -> dict[str, Any]:
    name = avro_name(field["name"])
    path = f"{parent}_{name}" if parent else name  # names nested records uniquely
    schema = _nullable(avro_type(field["type"], path), field.get("nullable", True))
    out: dict[str, Any] = {"name": name, "type": schema}
    if name != field["name"]:
        out[ORIGINAL] = field["name"]
    if isinstance(schema, list):
        out["default"] = None  # lets a new nullable column evolve the schema compatibly
    return out


def _nullable(schema: AvroSchema, nullable: bool) -> AvroSchema:
    return ["null", schema] if nullable else schema


def _avro_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if re.match(r"^[A-Za-z_]", cleaned) else f"_{cleaned}"
