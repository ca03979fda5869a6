"""What a comparison found, as data (for tests and benchmarks) and as text (for people)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Key = dict[str, Any]


@dataclass(frozen=True)
class Side:
    rows: int
    hash: int  # sum over rows of a row hash, wrapping: independent of row order
    distinct_keys: int


@dataclass(frozen=True)
class ColumnDiff:
    column: str
    keys: int  # keys whose value in this column differs
    sample_key: Key
    delta: str
    clickhouse: str


@dataclass(frozen=True)
class Report:
    source: str
    version: int
    target: str
    delta: Side
    clickhouse: Side
    schema_problems: list[str] = field(default_factory=list)
    lost: int = 0
    extra: int = 0
    wrong: int = 0
    lost_keys: list[Key] = field(default_factory=list)
    extra_keys: list[Key] = field(default_factory=list)
    wrong_keys: list[Key] = field(default_factory=list)
    columns: list[ColumnDiff] = field(default_factory=list)
    # Columns where a NULL list or map of Delta is compared as empty (as ClickHouse stores it).
    normalised: list[str] = field(default_factory=list)
    # As of a version (verify/asof.py): keys the replica holds a later change of, left out
    # of both sides; and the slice of the key buckets compared (1 of 1: all of them).
    moving: int = 0
    slice: tuple[int, int] = (0, 1)
    reader: str = ""  # what read the Delta side, where an as-of round says
    # Keys Delta's table holds more than one row of (an as-of round names them).
    duplicate: int = 0
    duplicate_keys: list[Key] = field(default_factory=list)
    # An as-of round named the keys of the buckets that differ (its step 2): those keys,
    # not the sides' totals, say whether the table is equal, since a bucket also differs
    # where a key moved during the round's first step (verify/asof_keys.py).
    keyed: bool = False

    @property
    def equal(self) -> bool:
        if self.schema_problems:
            return False
        if self.keyed:
            return not (self.lost or self.extra or self.wrong or self.duplicate)
        return self.delta == self.clickhouse

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "equal": self.equal}

    def render(self) -> str:
        read_by = f" (read by {self.reader})" if self.reader else ""
        lines = [
            f"Delta {self.source} at version {self.version}{read_by}: {_side(self.delta)}",
            f"ClickHouse {self.target}: {_side(self.clickhouse)}",
        ]
        if self.moving or self.slice != (0, 1):
            part = f"key slice {self.slice[0] + 1} of {self.slice[1]}; " * (self.slice[1] > 1)
            lines.append(f"{part}{self.moving:,} keys moving (changed after the version)")
        if self.normalised:
            lines.append(
                f"normalised: a NULL list or map is compared as empty in {', '.join(self.normalised)}"
                " (ClickHouse has no Nullable(Array) or Nullable(Map))"
            )
        if self.equal:
            return "\n".join([*lines, "equal"])
        lines += [f"schema: {problem}" for problem in self.schema_problems]
        repeated = self.delta.rows - self.delta.distinct_keys
        if repeated:
            lines.append(
                f"the key is not unique in the Delta table: {self.delta.rows:,} rows hold "
                f"{self.delta.distinct_keys:,} keys, and a replica keeps one row per key; "
                "choose key columns that are unique (--primary-key), then resync"
            )
        if self.duplicate:
            lines.append(
                f"the key is not unique in the Delta table: {self.duplicate:,} keys are held by "
                "more than one row, and a replica keeps one row per key. A commit appended "
                "rows whose keys were there (an INSERT where a MERGE was meant): remove the "
                "extra rows in Delta, or choose key columns that are unique (--primary-key) "
                "and resync; --repair leaves these keys alone"
            )
        duplicates = f", {self.duplicate:,} duplicate" * bool(self.duplicate)
        lines.append(
            f"NOT EQUAL: {self.lost:,} lost, {self.extra:,} extra, {self.wrong:,} wrong{duplicates}"
        )
        lines += _keys(
            "duplicate (more than one row in Delta)", self.duplicate, self.duplicate_keys
        )
        lines += _keys("lost (in Delta, not in ClickHouse)", self.lost, self.lost_keys)
        lines += _keys("extra (in ClickHouse, not in Delta)", self.extra, self.extra_keys)
        lines += _keys("wrong (values differ)", self.wrong, self.wrong_keys)
        lines += [
            f"  {d.column}: {d.keys:,} key{'s' if d.keys > 1 else ''}, e.g. {_key(d.sample_key)}: "
            f"Delta {d.delta}, ClickHouse {d.clickhouse}"
            for d in self.columns
        ]
        return "\n".join(lines)


def _side(side: Side) -> str:
    duplicates = side.rows - side.distinct_keys
    extra = f", {duplicates:,} duplicate keys" if duplicates else ""
    return f"{side.rows:,} rows, hash {side.hash:016x}{extra}"


def _keys(title: str, count: int, sample: list[Key]) -> list[str]:
    if not count:
        return []
    more = f" and {count - len(sample):,} more" if count > len(sample) else ""
    return [f"{title}: {', '.join(_key(k) for k in sample)}{more}"]


def _key(key: Key) -> str:
    return " ".join(f"{name}={value!r}" for name, value in key.items())
