"""What a bootstrap from the lake cannot load exactly: a NULL struct.

ClickHouse's Delta (Parquet) reader reads a struct as a Tuple that is never NULL: a NULL
struct comes out as its fields' defaults (NULL, empty, 0), the same as a struct whose
fields hold exactly those. The Kafka path keeps a NULL struct NULL (Nullable(Tuple), at
any depth: a column, an array's element, a map's value, a struct's field). So after the
load, every such place is checked: where no row holds the fields' defaults there, no
struct was NULL and the load is exact; else the rows cannot be told apart, and the
bootstrap is refused, naming the topic path.
"""

from __future__ import annotations

from clickhouse_connect.driver.client import Client

from schemas.clickhouse import literal, quote, split_type, tuple_element
from schemas.target import Target
from services.lake import LakeUnreadableError


def check(client: Client, into: Target, columns: dict[str, str], location: str) -> None:
    """LakeUnreadableError naming the columns where a row may have held a NULL struct."""
    found = {name: ambiguous(quote(name), kind) for name, kind in columns.items()}
    checked = {name: condition for name, condition in found.items() if condition}
    if not checked:
        return
    counts = ", ".join(f"countIf({condition})" for condition in checked.values())
    [rows] = client.query(f"SELECT {counts} FROM {into.name}").result_rows  # noqa: S608 - quoted
    unclear = [f"{name} ({n} rows)" for name, n in zip(checked, rows, strict=True) if n]
    if unclear:
        raise LakeUnreadableError(
            f"ClickHouse reads a NULL struct of the Delta table {location} as a struct of "
            f"NULL (or empty) fields, and some rows hold that in {', '.join(unclear)}: loaded "
            "from the lake, they could differ from the table. Replay the topic instead: "
            "cdfbridge-consumer rebuild --from-topic"
        )


def ambiguous(value: str, kind: str, depth: int = 0) -> str:
    """A condition true where `value` (of ClickHouse type `kind`) holds, at some depth, a
    Nullable(Tuple) whose fields are all their defaults; "" when `kind` has none."""
    name, arguments, each = *split_type(kind), f"x{depth}"
    if name == "Nullable" and split_type(arguments[0])[0] == "Tuple":
        inner = arguments[0]
        empty = f"toString({value}) = toString(defaultValueOfTypeName({literal(inner)}))"
        deeper = ambiguous(f"assumeNotNull({value})", inner, depth)
        return f"({empty}{f' OR {deeper}' if deeper else ''})"
    if name == "Tuple":
        parts = []
        for position, element in enumerate(arguments, start=1):
            field, field_kind = tuple_element(element)
            at = literal(field) if field is not None else str(position)
            if condition := ambiguous(f"tupleElement({value}, {at})", field_kind, depth):
                parts.append(condition)
        return f"({' OR '.join(parts)})" if parts else ""
    if name == "Array" and (condition := ambiguous(each, arguments[0], depth + 1)):
        return f"arrayExists({each} -> {condition}, {value})"
    if name == "Map" and (condition := ambiguous(each, arguments[1], depth + 1)):
        return f"arrayExists({each} -> {condition}, mapValues({value}))"
    return ""
