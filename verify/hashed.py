"""Columns the producer publishes hashed (--hash-columns), staged as it publishes them.

The snapshot's raw value is inserted into a column of its own, and the compared column is
MATERIALIZED from it by ClickHouse: `lower(hex(SHA256(x)))` of a string's or a binary's
bytes, of `toString(x)` for an integer. That is Spark's `sha2(col, 256)` of what the
producer hashes (schemas/column_policy.py), so the readers need not hash anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from schemas.clickhouse import quote
from schemas.column_policy import ColumnPolicy, TableSchema, hashes_text

RAW = "__cdfbridge_raw_"  # prefix of a hashed column's raw value in the staging table
HASHED_KINDS = ("String", "Nullable(String)")  # what the consumer makes of a hashed column

Hashed = Mapping[str, bool]  # hashed column → hashed as its decimal text (an integer)


def hashed_columns(
    policy: ColumnPolicy, schema: TableSchema, target: Sequence[tuple[str, str]]
) -> tuple[dict[str, bool], list[str]]:
    """The columns to stage hashed, and a line for each one ClickHouse does not hold as a
    hash: it was published unhashed, so it is staged, and compared, as it is."""
    kinds, types = dict(target), {f["name"]: f["type"] for f in schema["fields"]}
    hashed, problems = {}, []
    for name in sorted(policy.hashed & set(kinds)):
        if kinds[name] in HASHED_KINDS:
            hashed[name] = hashes_text(types[name])
        else:
            problems.append(
                f"column {quote(name)} is hashed by --hash-columns, but ClickHouse holds it as "
                f"{kinds[name]}: was the producer given the same --hash-columns?"
            )
    return hashed, problems


def definition(name: str, kind: str, hashed: Hashed) -> str:
    """A staging column: as the target has it, or a hashed one with its raw value."""
    if name not in hashed:
        return f"{quote(name)} {kind}"
    raw = quote(RAW + name)
    raw_kind = "Int64" if hashed[name] else "String"
    if kind.startswith("Nullable("):
        raw_kind = f"Nullable({raw_kind})"
    value = f"toString({raw})" if hashed[name] else raw
    return f"{raw} {raw_kind}, {quote(name)} {kind} MATERIALIZED lower(hex(SHA256({value})))"


def raw(block: pa.Table, hashed: Hashed) -> pa.Table:
    """block with each hashed column renamed to its raw column."""
    if not hashed:
        return block
    return block.rename_columns([RAW + n if n in hashed else n for n in block.column_names])
