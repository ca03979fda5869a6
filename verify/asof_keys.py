"""Step 2 of an as-of round (verify/asof.py): the keys of the buckets that differ, named
from one read of each side.

- Delta's side: the table's rows at V, grouped by key: a key held by more than one row is
  a *duplicate key* (a later commit appended a row whose key was there already: an INSERT
  where a MERGE was meant). The replica keeps one row per key, so such a key is named, not
  compared, and no repair can settle it.
- The replica's side: per key, its newest row (argMax by `_version`), whether that row is a
  delete, and the key's highest `_version`, all from one scan. A key with a row from a
  commit after V (in V's generation or a later one: verify/asof.py `Scope.moving_from`) is
  moving; it is left out here as in step 1. Taking that from the
  same scan as the rows means a commit stored during the round moves its key, instead of
  making it look lost or wrong, as two reads of the replica could.

Step 1 reads the replica twice (its moving keys, then its rows); a bucket that differs only
because of a commit stored between them is read again here, and found equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from schemas.changes import IS_DELETED, VERSION
from schemas.clickhouse import quote
from schemas.target import Target
from verify import compare
from verify.lake_side import Columns, LakeSide

# Aliases no table column is likely to have.
_ROW, _ROWS, _LATEST, _DELETED = (
    "__cdfbridge_row",
    "__cdfbridge_rows",
    "__cdfbridge_latest",
    "__cdfbridge_deleted",
)
CARRIED = (_ROWS, _LATEST, _DELETED)


def kinds(moving_from: int) -> compare.Kinds:
    """Lost, extra, wrong and duplicate keys, those with a `_version` from moving_from on
    (moving) left out."""
    settled = f"c.{_LATEST} < {int(moving_from)}"  # no row of the key after V (or none)
    live = f"{compare.IN_CLICKHOUSE} AND c.{_DELETED} = 0 AND {settled}"
    single = f"{compare.IN_DELTA} AND s.{_ROWS} = 1 AND {settled}"
    return compare.Kinds(
        lost=f"{single} AND NOT ({live})",
        extra=f"{live} AND NOT {compare.IN_DELTA}",
        compared=f"{single} AND {live}",
        more={"duplicate": f"s.{_ROWS} > 1 AND {settled}"},
        carried=CARRIED,
    )


def differences(
    client: Any,
    lake: LakeSide,
    target: Target,
    columns: Columns,
    keys: Sequence[str],
    within: str,
    moving_from: int,
) -> dict[str, Any]:
    """Lost, extra, wrong and duplicate keys (counts and samples) of the rows `within`
    selects (a condition on the key), per column what differs."""
    return compare.differences(
        client,
        f"({lake_keys(lake, columns, keys, within)})",
        f"({replica_keys(target, columns, keys, within)})",
        columns,
        keys,
        parameters=lake.parameters,
        settings=lake.settings,
        kinds=kinds(moving_from),
    )


def lake_keys(lake: LakeSide, columns: Columns, keys: Sequence[str], within: str) -> str:
    """Delta's rows at V, one per key, with how many rows hold the key."""
    values = _values(columns, keys)
    inner = (
        f"SELECT {_keys(keys)}, count() AS {_ROWS}, any({_tuple(values)}) AS {_ROW} "  # noqa: S608
        f"FROM ({lake.rows(columns)}) WHERE {within} GROUP BY {_keys(keys)}"
    )
    return _unpacked(inner, keys, values, f"{_ROWS}, 0 AS {_LATEST}, 0 AS {_DELETED}")


def replica_keys(target: Target, columns: Columns, keys: Sequence[str], within: str) -> str:
    """The replica's newest row per key, whether it is a delete, and the key's highest
    `_version`: one scan."""
    values = _values(columns, keys)
    newest = f"argMax({{}}, {quote(VERSION)})"
    inner = (
        f"SELECT {_keys(keys)}, {newest.format(_tuple(values))} AS {_ROW}, "  # noqa: S608
        f"max({quote(VERSION)}) AS {_LATEST}, "
        f"{newest.format(quote(IS_DELETED))} AS {_DELETED} "
        f"FROM {target.name} WHERE {within} GROUP BY {_keys(keys)}"
    )
    return _unpacked(inner, keys, values, f"1 AS {_ROWS}, {_LATEST}, {_DELETED}")


def _values(columns: Columns, keys: Sequence[str]) -> list[str]:
    return [name for name, _ in columns if name not in keys]


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(quote(k) for k in keys)


def _tuple(values: Sequence[str]) -> str:
    """The values as one tuple; its first element is a constant, so that a table of keys
    alone has one too."""
    return f"tuple({', '.join(['0', *(quote(v) for v in values)])})"


def _unpacked(inner: str, keys: Sequence[str], values: Sequence[str], carried: str) -> str:
    """inner's key columns, its row tuple as the value columns again, and `carried`."""
    unpacked = [f"tupleElement({_ROW}, {i + 2}) AS {quote(v)}" for i, v in enumerate(values)]
    return f"SELECT {', '.join([_keys(keys), *unpacked, carried])} FROM ({inner})"  # noqa: S608
