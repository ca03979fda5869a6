"""Avro value schema → ClickHouse column types, as the consumer and Kafka-engine DDL use them.

| Avro                                   | ClickHouse                 |
| -------------------------------------- | -------------------------- |
| boolean                                | Bool                       |
| int + connect.type int8, int16         | Int8, Int16                |
| int, long                              | Int32, Int64               |
| float, double                          | Float32, Float64           |
| bytes + decimal(p,s)                   | Decimal(p, s)              |
| string, bytes                          | String                     |
| int + date                             | Date32                     |
| long + timestamp-micros                | DateTime64(6, 'UTC')       |
| long + local-timestamp-micros          | DateTime64(6)              |
| array, map, record                     | Array(T), Map(String, T), Tuple(name T, ...) |
| ["null", T]                            | Nullable(T), Nullable(Tuple(...)) too; Array and Map cannot be Nullable: T (null reads as empty) |

Column and tuple element names are the Delta names (a field's `delta.name`), quoted. On a
server without Nullable(Tuple) (`enable_nullable_tuple_type`, ClickHouse 25.x and older), a
NULL struct is stored as a tuple of defaults: pass nullable_tuple=False.

ClickHouse reads AvroConfluent by Avro name, so an insert names each column's input with its
Avro name and types, then casts tuples positionally: `input_columns`.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from schemas.avro_names import delta_name
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
_CONNECT = {"int8": "Int8", "int16": "Int16"}
_NEVER_NULLABLE = ("Array(", "Map(")
Names = Literal["delta", "avro", "none"]  # how tuple elements are named


class TypeMappingError(TerminalError):
    """An Avro schema this contract does not produce and ClickHouse cannot store."""


def quote(identifier: str) -> str:
    """A ClickHouse identifier in backquotes, safe for any column or table name."""
    return "`" + identifier.replace("\\", "\\\\").replace("`", "\\`") + "`"


def literal(value: str | int) -> str:
    """A ClickHouse string (or number) literal."""
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def clickhouse_type(avro: Any, names: Names = "delta", nullable_tuple: bool = True) -> str:
    """The ClickHouse type of an Avro schema; `names` picks the tuple elements' names."""
    if isinstance(avro, list):
        branches = [branch for branch in avro if branch != "null"]
        if len(branches) != 1:
            raise TypeMappingError(f"union {avro} has no ClickHouse type; only [null, T] is used")
        inner = clickhouse_type(branches[0], names, nullable_tuple)
        never = _NEVER_NULLABLE if nullable_tuple else (*_NEVER_NULLABLE, "Tuple(")
        nullable = "null" in avro and not inner.startswith(never)
        return f"Nullable({inner})" if nullable else inner
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro]
        raise TypeMappingError(f"Avro type {avro!r} has no ClickHouse mapping")
    if avro.get("connect.type") in _CONNECT:
        return _CONNECT[avro["connect.type"]]
    logical = avro.get("logicalType")
    if logical == "decimal":
        return f"Decimal({avro['precision']}, {avro.get('scale', 0)})"
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    kind = avro["type"]
    if kind == "array":
        return f"Array({clickhouse_type(avro['items'], names, nullable_tuple)})"
    if kind == "map":
        return f"Map(String, {clickhouse_type(avro['values'], names, nullable_tuple)})"
    if kind == "record":
        return f"Tuple({', '.join(_member(f, names, nullable_tuple) for f in avro['fields'])})"
    return clickhouse_type(kind, names, nullable_tuple)


def _member(field: dict[str, Any], names: Names, nullable_tuple: bool) -> str:
    kind = clickhouse_type(field["type"], names, nullable_tuple)
    if names == "none":
        return kind
    return f"{quote(delta_name(field) if names == 'delta' else field['name'])} {kind}"


def columns(value_schema: dict[str, Any], nullable_tuple: bool = True) -> list[tuple[str, str]]:
    """(Delta name, ClickHouse type) of every field of a value record, in order."""
    return [
        (delta_name(field), clickhouse_type(field["type"], "delta", nullable_tuple))
        for field in value_schema["fields"]
    ]


class InputColumn(NamedTuple):
    """How one column is read from AvroConfluent input and written to the table."""

    name: str  # the table's column: the Delta name
    avro_name: str
    input_type: str  # tuple elements under their Avro names, as ClickHouse reads them
    expression: str  # the input column as the table's type: tuples cast by position


def input_columns(value_schema: dict[str, Any], nullable_tuple: bool = True) -> list[InputColumn]:
    out = []
    for field in value_schema["fields"]:
        read = clickhouse_type(field["type"], "avro", nullable_tuple)
        stored = clickhouse_type(field["type"], "delta", nullable_tuple)
        expression = quote(field["name"])
        if read != stored:  # a renamed tuple element: CAST matches named tuples by name
            positional = clickhouse_type(field["type"], "none", nullable_tuple)
            expression = f"CAST({expression}, {literal(positional)})"
        out.append(InputColumn(delta_name(field), field["name"], read, expression))
    return out


def split_type(kind: str) -> tuple[str, list[str]]:
    """`Map(String, Array(Int64))` → ("Map", ["String", "Array(Int64)"]): the arguments
    split at commas outside parentheses and quotes."""
    kind = kind.strip()
    if not kind.endswith(")") or "(" not in kind:
        return kind, []
    name, _, body = kind.partition("(")
    parts: list[str] = []
    depth, start, quote_char = 0, 0, ""
    body = body[:-1]
    for i, char in enumerate(body):
        if quote_char:
            quote_char = "" if char == quote_char and body[i - 1] != "\\" else quote_char
        elif char in "'`":
            quote_char = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    parts.append(body[start:].strip())
    return name.strip(), parts


def tuple_element(element: str) -> tuple[str | None, str]:
    """A Tuple element, `name Type` or just `Type`, as (name or None, Type); a name may be
    backquoted."""
    element = element.strip()
    if element.startswith("`"):
        end = 1
        while element[end] != "`":
            end += 2 if element[end] == "\\" else 1
        return element[1:end], element[end + 1 :].strip()
    head, _, rest = element.partition(" ")
    if rest and "(" not in head:
        return head, rest.strip()
    return None, element
