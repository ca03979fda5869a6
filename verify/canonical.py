"""Canonical ClickHouse expressions: equal values give equal hashes.

Both sides of a comparison are stored in the same ClickHouse column types, which already
normalises decimals, timestamps, dates and binaries. What is left is order: a map's entries
keep the order they were written in, so every map, nested or not, is sorted by key.
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas.clickhouse import quote, split_type, tuple_element


def canonical(expr: str, kind: str, depth: int = 0) -> str:
    """`expr` of ClickHouse type `kind`, with every map in it sorted by key."""
    name, args = split_type(kind)
    if name == "Map":
        value = f"v{depth}"
        inner = canonical(value, args[1], depth + 1)
        if inner != value:
            expr = f"mapApply((k{depth}, {value}) -> (k{depth}, {inner}), {expr})"
        return f"mapSort({expr})"
    if name == "Array":
        item = f"e{depth}"
        inner = canonical(item, args[0], depth + 1)
        return expr if inner == item else f"arrayMap({item} -> {inner}, {expr})"
    if name == "Nullable":  # of a Tuple holding a map: sort inside, keep NULL
        inner_expr = f"assumeNotNull({expr})"
        inner = canonical(inner_expr, args[0], depth)
        return expr if inner == inner_expr else f"if(isNull({expr}), NULL, {inner})"
    if name == "Tuple":
        elements = [f"tupleElement({expr}, {i})" for i in range(1, len(args) + 1)]
        parts = [
            canonical(e, tuple_element(a)[1], depth + 1)
            for e, a in zip(elements, args, strict=True)
        ]
        return expr if parts == elements else f"tuple({', '.join(parts)})"
    return expr  # scalars and Nullable(scalar): the column type is the canonical form


def emptied(columns: Sequence[tuple[str, str]]) -> list[str]:
    """Columns holding a list or a map, at any depth: ClickHouse has no Nullable(Array) or
    Nullable(Map), so a NULL one there is stored, and compared, as empty."""
    return [name for name, kind in columns if _holds_list(kind)]


def _holds_list(kind: str) -> bool:
    name, args = split_type(kind)
    if name in ("Array", "Map"):
        return True
    return any(_holds_list(tuple_element(arg)[1]) for arg in args if name in ("Nullable", "Tuple"))


def row_hash(columns: Sequence[tuple[str, str]]) -> str:
    """One UInt64 per row over all columns; NULL hashes differently from any value."""
    parts = ", ".join(canonical(quote(name), kind) for name, kind in columns)
    return f"cityHash64(tuple({parts}))"
