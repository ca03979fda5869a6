"""What a bootstrap from the lake cannot load exactly: a NULL struct.

ClickHouse's Delta (Parquet) reader reads a struct column as a Tuple that is never NULL: a
NULL struct comes out as its fields' defaults (NULL, empty, 0), the same as a struct whose
fields hold exactly those. The Kafka path keeps a NULL struct NULL (Nullable(Tuple)). So
after the load, every Nullable(Tuple) column is checked: where no row holds the fields'
defaults, there was no NULL struct and the load is exact; else the rows cannot be told
apart, and the bootstrap is refused, naming the topic path.
"""

from __future__ import annotations

from clickhouse_connect.driver.client import Client

from consumer.lake import LakeUnreadableError
from schemas.clickhouse import literal, quote
from schemas.target import Target

NULLABLE = "Nullable("


def check(client: Client, into: Target, columns: dict[str, str], location: str) -> None:
    """LakeUnreadableError naming the struct columns where a row may have been a NULL struct."""
    structs = {
        name: kind[len(NULLABLE) : -1]
        for name, kind in columns.items()
        if kind.startswith(NULLABLE + "Tuple(")
    }
    if not structs:
        return
    counts = ", ".join(
        f"countIf(toString({quote(name)}) = toString(defaultValueOfTypeName({literal(inner)})))"
        for name, inner in structs.items()
    )
    [found] = client.query(f"SELECT {counts} FROM {into.name}").result_rows  # noqa: S608 - quoted
    unclear = [f"{name} ({n} rows)" for name, n in zip(structs, found, strict=True) if n]
    if unclear:
        raise LakeUnreadableError(
            f"ClickHouse reads a NULL struct of the Delta table {location} as a struct of "
            f"NULL (or empty) fields, and some rows hold that in {', '.join(unclear)}: loaded "
            "from the lake, they could differ from the table. Replay the topic instead: "
            "cdfbridge-consumer rebuild --from-topic"
        )
