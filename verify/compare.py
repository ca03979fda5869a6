"""Compare two ClickHouse relations of the same columns: a summary first, details on mismatch.

Both queries run inside ClickHouse, so a comparison of millions of rows moves only a few
numbers and samples to the client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from schemas.clickhouse import quote
from verify.canonical import canonical, row_hash
from verify.report import ColumnDiff, Key, Side

Columns = Sequence[tuple[str, str]]
SAMPLES = 5
# Aliases no table column is likely to have: ClickHouse lets an alias shadow a column.
_IN, _HASH, _V, _H = "__cdfbridge_in", "__cdfbridge_hash", "__cdfbridge_v", "__cdfbridge_h"
IN_DELTA, IN_CLICKHOUSE = f"s.{_IN}", f"c.{_IN}"


@dataclass(frozen=True)
class Kinds:
    """What each kind of key is, as conditions on a row of the join by key (`s.`: Delta's
    side, `c.`: ClickHouse's): lost, extra, and `compared` (both hold the key: its values
    are compared, `wrong` where they differ); `more` counts other kinds, with samples."""

    lost: str = f"{IN_DELTA} AND NOT {IN_CLICKHOUSE}"
    extra: str = f"{IN_CLICKHOUSE} AND NOT {IN_DELTA}"
    compared: str = f"{IN_DELTA} AND {IN_CLICKHOUSE}"
    more: Mapping[str, str] = field(default_factory=dict)
    carried: Sequence[str] = ()  # columns both relations have besides the compared ones


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
    kinds: Kinds | None = None,
) -> dict[str, Any]:
    """Counts and samples of lost, extra and wrong keys (and of `kinds.more`), and per
    column what differs; the relations may be subqueries, with the query parameters and
    settings they need, and columns besides `columns` that `kinds` names."""
    kinds = kinds or Kinds()
    values = [(i, name, kind) for i, (name, kind) in enumerate(columns) if name not in keys]
    key_tuple = f"tuple({', '.join(quote(k) for k in keys)})"
    both = kinds.compared
    counted = [
        kinds.lost,
        kinds.extra,
        f"{both} AND s.{_HASH} != c.{_HASH}",
        *kinds.more.values(),
    ]
    aggregates = [f"countIf({where})" for where in counted]
    aggregates += [f"groupArrayIf({SAMPLES})({key_tuple}, {where})" for where in counted]
    for i, _, _ in values:
        differs = f"{both} AND s.{_H}{i} != c.{_H}{i}"
        aggregates += [
            f"countIf({differs})",
            f"argMinIf(({key_tuple}, toString(s.{_V}{i}), toString(c.{_V}{i})), {key_tuple}, {differs})",
        ]
    query = (
        f"SELECT {', '.join(aggregates)} "  # noqa: S608 - quoted names
        f"FROM ({_side_query(delta, columns, keys, values, kinds.carried)}) AS s "
        f"FULL OUTER JOIN ({_side_query(clickhouse, columns, keys, values, kinds.carried)}) AS c "
        f"USING ({', '.join(quote(k) for k in keys)})"
    )
    asked = {**(settings or {}), "join_use_nulls": 0}
    [row] = client.query(query, parameters=parameters, settings=asked).result_rows
    names, n = ["lost", "extra", "wrong", *kinds.more], len(counted)
    diffs = []
    for (_, name, _), count, (sample, delta_value, ch_value) in zip(
        values, row[2 * n :: 2], row[2 * n + 1 :: 2], strict=True
    ):
        if count:
            diffs.append(ColumnDiff(name, int(count), _key(keys, sample), delta_value, ch_value))
    found: dict[str, Any] = {name: int(count) for name, count in zip(names, row[:n], strict=True)}
    for name, sample in zip(names, row[n : 2 * n], strict=True):
        found[f"{name}_keys"] = [_key(keys, k) for k in sample]
    return {**found, "columns": diffs}


def _side_query(
    relation: str,
    columns: Columns,
    keys: Sequence[str],
    values: Sequence[tuple[int, str, str]],
    carried: Sequence[str],
) -> str:
    per_column = [
        f"{canonical(quote(name), kind)} AS {_V}{i}, cityHash64(tuple({_V}{i})) AS {_H}{i}"
        for i, name, kind in values
    ]
    selected = [quote(k) for k in keys] + [f"1 AS {_IN}", f"{row_hash(columns)} AS {_HASH}"]
    selected += list(carried)
    return f"SELECT {', '.join(selected + per_column)} FROM {relation}"  # noqa: S608


def _key(keys: Sequence[str], values: Sequence[Any]) -> Key:
    return dict(zip(keys, values, strict=True))
