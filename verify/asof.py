"""The replica against the Delta table as of version V, inside ClickHouse.

A key is *moving* when the replica holds a row of it from a commit after V: it is left out
of both sides, and checked by a later round. Every other key's newest row in the replica
is its state at V (the replica has consumed V: verify/consumed.py), so the two sides must
match: the Delta table's rows at V, and the replica's newest rows that are not deletes.

1. Per bucket of a key hash (BUCKETS of them), both sides' row counts and order-free sums
   of a row hash, in one query; the moving keys are counted alongside. A round may take
   one slice of the buckets (`bucket % slices == slice`), so that a large table is
   covered over several rounds;
2. only where a bucket differs, a join by key of those buckets' rows names the lost, extra,
   wrong and duplicate keys, from one read of the replica (verify/asof_keys.py): a key
   that moved during the round is left out there too, so step 1's two reads of the
   replica cannot make it look lost or wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schemas.changes import DELETE, IS_DELETED, VERSION
from schemas.changes import version as row_version
from schemas.clickhouse import quote
from schemas.target import Target
from verify import asof_keys
from verify.canonical import row_hash
from verify.lake_side import Columns, LakeSide
from verify.report import Side

BUCKETS = 1024
_KEY = "__cdfbridge_key"  # an alias no table column is likely to have


@dataclass(frozen=True)
class Scope:
    """What one round compares: the key columns, the slice of the buckets, and the
    generation of the version compared (0 where the target has no `_generation` column,
    whose `_version` then counts none)."""

    keys: Sequence[str]
    slices: int = 1
    slice: int = 0
    generation: int = 0

    def moving_from(self, version: int) -> int:
        """The least `_version` of a change after `version` in its generation or in a later
        one: a key with such a row is moving. A row of an older generation never is, how
        high its commit version may be (a table created again starts over at 0)."""
        return row_version(version + 1, DELETE, self.generation)

    @property
    def key_tuple(self) -> str:
        return f"tuple({', '.join(quote(k) for k in self.keys)})"

    @property
    def bucket(self) -> str:
        return f"cityHash64({', '.join(quote(k) for k in self.keys)}) % {BUCKETS}"

    def within(self, buckets: Sequence[int] | None = None) -> str:
        """The condition on a row of either side: in this slice, and in `buckets` if given."""
        found = [] if self.slices == 1 else [f"{self.bucket} % {self.slices} = {self.slice}"]
        if buckets is not None:
            found.append(f"{self.bucket} IN ({', '.join(map(str, buckets))})")
        return " AND ".join(found) or "1"


@dataclass(frozen=True)
class Found:
    """Step 1's answer: each side's totals, the moving keys and the buckets that differ."""

    lake: Side
    replica: Side
    moving: int
    differing: list[int]


def summarize(client: Any, lake: LakeSide, target: Target, columns: Columns, scope: Scope) -> Found:
    """1."""
    parts = [
        f"SELECT {side} AS side, {scope.bucket} AS bucket, count() AS c, "  # noqa: S608
        f"sumWithOverflow({row_hash(columns)}) AS h FROM ({rows}) GROUP BY bucket"
        for side, rows in enumerate(sides(lake, target, columns, scope))
    ]
    query = (
        "SELECT bucket, sumIf(c, side = 0), sumWithOverflowIf(h, side = 0), "  # noqa: S608
        "sumIf(c, side = 1), sumWithOverflowIf(h, side = 1) "
        f"FROM ({' UNION ALL '.join(parts)}) GROUP BY bucket"
    )
    buckets = client.query(query, parameters=lake.parameters, settings=lake.settings).result_rows
    moving = client.command(
        f"SELECT uniqExact({_KEY}) FROM ({_moving(target, lake.version, scope)})"  # noqa: S608
    )
    wrap = 2**64
    return Found(
        _side(sum(b[1] for b in buckets), sum(b[2] for b in buckets) % wrap),
        _side(sum(b[3] for b in buckets), sum(b[4] for b in buckets) % wrap),
        int(str(moving)),
        sorted(int(b[0]) for b in buckets if (b[1], b[2]) != (b[3], b[4])),
    )


def differences(
    client: Any,
    lake: LakeSide,
    target: Target,
    columns: Columns,
    scope: Scope,
    buckets: Sequence[int],
) -> dict[str, Any]:
    """2.: lost, extra, wrong and duplicate keys of `buckets`, with samples, from one read
    of each side (verify/asof_keys.py)."""
    moving_from = scope.moving_from(lake.version)
    within = scope.within(buckets)
    return asof_keys.differences(client, lake, target, columns, scope.keys, within, moving_from)


def _side(rows: int, total: int) -> Side:
    """A side's totals; its keys are not counted apart (a key held twice makes its bucket
    differ, and the join names it)."""
    return Side(int(rows), int(total), int(rows))


def sides(
    lake: LakeSide,
    target: Target,
    columns: Columns,
    scope: Scope,
    buckets: Sequence[int] | None = None,
) -> tuple[str, str]:
    """Both sides' rows in scope (and in `buckets` if given), without the moving keys; the
    replica's with their `_version` besides."""
    narrowed = "" if buckets is None else f" AND {Scope(scope.keys).within(buckets)}"
    not_moving = (
        f"{scope.key_tuple} GLOBAL NOT IN ({_moving(target, lake.version, scope)}){narrowed}"
    )
    names = ", ".join(quote(name) for name in [*(name for name, _ in columns), VERSION])
    lake_rows = f"SELECT * FROM ({lake.rows(columns)}) WHERE {scope.within()} AND {not_moving}"  # noqa: S608
    replica_rows = (
        f"SELECT {names} FROM {target.name} FINAL WHERE {quote(IS_DELETED)} = 0 "  # noqa: S608
        f"AND {scope.within()} AND {not_moving}"
    )
    return lake_rows, replica_rows


def _moving(target: Target, version: int, scope: Scope) -> str:
    """The keys of the replica's rows from commits after `version` (Scope.moving_from)."""
    return (
        f"SELECT {scope.key_tuple} AS {_KEY} FROM {target.name} "  # noqa: S608 - quoted names
        f"WHERE {quote(VERSION)} >= {scope.moving_from(version)} AND {scope.within()}"
    )
