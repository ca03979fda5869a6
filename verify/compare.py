"""Compare two ClickHouse relations of the same columns: a summary first, details on mismatch.

Both queries run inside ClickHouse, so a comparison of millions of rows moves only a few
numbers and samples to the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schemas.clickhouse import quote
from verify.canonical import canonical, row_hash
from verify.report import ColumnDiff, Key, Side

Columns = Sequence[tuple[str, str]]
SAMPLES = 5
# Aliases no table column is likely to have: ClickHouse lets an alias shadow a column.
_IN, _HASH, _V, _H = "__cdfbridge_in", "__cdfbridge_hash", "__cdfbridge_v", "__cdfbridge_h"


def summarize(client: Any, relation: str, columns: Columns, keys: Sequence[str]) -> Side:
    key_tuple = f"tuple({', '.join(quote(k) for k in keys)})"
    aggregates = f"count(), sumWithOverflow({row_hash(columns)}), uniqExact({key_tuple})"
    sql = f"SELECT {aggregates} FROM {relation}"  # noqa: S608 - quoted names
    [(rows, total, distinct)] = client.query(sql).result_rows
    return Side(int(rows), int(total), int(distinct))


def differences(
    client: Any,
    delta: str,
    clickhouse: str,
    columns: Columns,
    keys: Sequence[str],
    parameters: dict[str, str] | None = None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Counts and samples of lost, extra and wrong keys, and per column what differs; the
    relations may be subqueries, with the query parameters and settings they need."""
    values = [(i, name, kind) for i, (name, kind) in enumerate(columns) if name not in keys]
    key_tuple = f"tuple({', '.join(quote(k) for k in keys)})"
    both = f"s.{_IN} AND c.{_IN}"
    aggregates = [
        f"countIf(s.{_IN} AND NOT c.{_IN})",
        f"countIf(c.{_IN} AND NOT s.{_IN})",
        f"countIf({both} AND s.{_HASH} != c.{_HASH})",
        f"groupArrayIf({SAMPLES})({key_tuple}, s.{_IN} AND NOT c.{_IN})",
        f"groupArrayIf({SAMPLES})({key_tuple}, c.{_IN} AND NOT s.{_IN})",
        f"groupArrayIf({SAMPLES})({key_tuple}, {both} AND s.{_HASH} != c.{_HASH})",
    ]
    for i, _, _ in values:
        differs = f"{both} AND s.{_H}{i} != c.{_H}{i}"
        aggregates += [
            f"countIf({differs})",
            f"argMinIf(({key_tuple}, toString(s.{_V}{i}), toString(c.{_V}{i})), {key_tuple}, {differs})",
        ]
    query = (
        f"SELECT {', '.join(aggregates)} "  # noqa: S608 - quoted names
        f"FROM ({_side_query(delta, columns, keys, values)}) AS s "
        f"FULL OUTER JOIN ({_side_query(clickhouse, columns, keys, values)}) AS c "
        f"USING ({', '.join(quote(k) for k in keys)})"
    )
    asked = {**(settings or {}), "join_use_nulls": 0}
    [row] = client.query(query, parameters=parameters, settings=asked).result_rows
    lost, extra, wrong, lost_keys, extra_keys, wrong_keys = row[:6]
    diffs = []
    for (_, name, _), count, (sample, delta_value, ch_value) in zip(
        values, row[6::2], row[7::2], strict=True
    ):
        if count:
            diffs.append(ColumnDiff(name, int(count), _key(keys, sample), delta_value, ch_value))
    return {
        "lost": int(lost),
        "extra": int(extra),
        "wrong": int(wrong),
        "lost_keys": [_key(keys, k) for k in lost_keys],
        "extra_keys": [_key(keys, k) for k in extra_keys],
        "wrong_keys": [_key(keys, k) for k in wrong_keys],
        "columns": diffs,
    }


def _side_query(
    relation: str, columns: Columns, keys: Sequence[str], values: Sequence[tuple[int, str, str]]
) -> str:
    per_column = [
        f"{canonical(quote(name), kind)} AS {_V}{i}, cityHash64(tuple({_V}{i})) AS {_H}{i}"
        for i, name, kind in values
    ]
    selected = [quote(k) for k in keys] + [f"1 AS {_IN}", f"{row_hash(columns)} AS {_HASH}"]
    return f"SELECT {', '.join(selected + per_column)} FROM {relation}"  # noqa: S608


def _key(keys: Sequence[str], values: Sequence[Any]) -> Key:
    return dict(zip(keys, values, strict=True))
