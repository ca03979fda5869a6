"""Avro value schema → ClickHouse column types, as the consumer and Kafka-engine DDL use them.

| Avro                                   | ClickHouse                 |
| -------------------------------------- | -------------------------- |
| boolean                                | Bool                       |
| int, long                              | Int32, Int64               |
| float, double                          | Float32, Float64           |
| bytes + decimal(p,s)                   | Decimal(p, s)              |
| string, bytes                          | String                     |
| int + date                             | Date32                     |
| long + timestamp-micros                | DateTime64(6, 'UTC')       |
| long + local-timestamp-micros          | DateTime64(6)              |
| array, map, record                     | Array(T), Map(String, T), Tuple(name T, ...) |
| ["null", T]                            | Nullable(T); for Array, Map and Tuple, which ClickHouse cannot make Nullable, T (null reads as empty) |
"""

from __future__ import annotations

from typing import Any

from schemas.errors import TerminalError

_PRIMITIVES = {
    "boolean": "Bool",
    "int": "Int32",
    "long": "Int64",
    "float": "Float32",
    "double": "Float64",
    "string": "String",
    "bytes": "String",
}
_LOGICAL = {
    "date": "Date32",
    "timestamp-micros": "DateTime64(6, 'UTC')",
    "local-timestamp-micros": "DateTime64(6)",
}
_COMPOSITE = ("Array(", "Map(", "Tuple(")


class TypeMappingError(TerminalError):
    """An Avro schema this contract does not produce and ClickHouse cannot store."""


def quote(identifier: str) -> str:
    """A ClickHouse identifier in backquotes, safe for any column or table name."""
    return "`" + identifier.replace("\\", "\\\\").replace("`", "\\`") + "`"


def clickhouse_type(avro: Any) -> str:
    if isinstance(avro, list):
        branches = [branch for branch in avro if branch != "null"]
        if len(branches) != 1:
            raise TypeMappingError(f"union {avro} has no ClickHouse type; only [null, T] is used")
        inner = clickhouse_type(branches[0])
        nullable = "null" in avro and not inner.startswith(_COMPOSITE)
        return f"Nullable({inner})" if nullable else inner
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro]
        raise TypeMappingError(f"Avro type {avro!r} has no ClickHouse mapping")
    logical = avro.get("logicalType")
    if logical == "decimal":
        return f"Decimal({avro['precision']}, {avro.get('scale', 0)})"
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    kind = avro["type"]
    if kind == "array":
        return f"Array({clickhouse_type(avro['items'])})"
    if kind == "map":
        return f"Map(String, {clickhouse_type(avro['values'])})"
    if kind == "record":
        members = ", ".join(
            f"{quote(f['name'])} {clickhouse_type(f['type'])}" for f in avro["fields"]
        )
        return f"Tuple({members})"
    return clickhouse_type(kind)


def columns(value_schema: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, ClickHouse type) of every field of a value record, in order."""
    return [(field["name"], clickhouse_type(field["type"])) for field in value_schema["fields"]]
