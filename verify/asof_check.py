"""One table's as-of round: its target found once, then each round at a consumed version.

1. the target table's columns and key (once: `prepare`);
2. the Delta side at the version (verify/lake_side.py), the columns both sides share;
3. the bucket summary, and the keys of the buckets that differ (verify/asof.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from schemas.changes import GENERATION
from schemas.errors import ConfigError
from schemas.target import Target
from services.clickhouse_client import existing_columns
from verify import asof, canonical, lake_side
from verify.check import shared_columns, sorting_key, target_columns
from verify.repair import repair
from verify.report import Report
from verify.settings import VerifySettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Table:
    """What every round of one table uses."""

    settings: VerifySettings
    target: Target
    columns: list[tuple[str, str]]  # the target's, without cdfbridge's metadata
    keys: list[str]
    generations: bool  # the target has the `_generation` column

    @property
    def name(self) -> str:
        return self.target.name


@dataclass(frozen=True)
class Round:
    report: Report
    seconds: float
    rows: int  # both sides' rows compared


def prepare(settings: VerifySettings, client: Any) -> Table:
    """1.; NothingToCompareError while the target table does not exist."""
    s = settings.verify
    target = Target(settings.clickhouse.database, s.target_table, settings.clickhouse.cluster)
    columns = target_columns(client, target)
    keys = s.primary_key or sorting_key(client, target.local)
    if not keys:
        raise ConfigError(
            f"cannot tell the key of {target.name} (its table has no ORDER BY columns): pass "
            "--primary-key, or set clickhouse.cluster when it is a Distributed table"
        )
    generations = GENERATION in (existing_columns(client, target) or {})
    return Table(settings, target, columns, keys, generations)


def run_round(
    table: Table, client: Any, version: int, scope: asof.Scope, mend: bool = False
) -> Round:
    """2. and 3.; with `mend`, what differs is repaired (verify/repair.py) once found: a
    later round tells whether the table is equal."""
    began = time.monotonic()
    s = table.settings.verify
    with lake_side.opened(table.settings, client, table.target, table.columns, version) as lake:
        published = [name for name in lake.names if name not in s.column_policy.exclude]
        shared, problems = shared_columns(table.columns, published)
        shared = [(name, kind) for name, kind in shared if name in lake.expressions]
        found = asof.summarize(client, lake, table.target, shared, scope)
        details: dict[str, Any] = {}
        if found.differing:
            details = asof.differences(client, lake, table.target, shared, scope, found.differing)
            details["keyed"] = True
            if details["duplicate"]:
                _refused(table, details)
            if mend:
                repair(
                    client, lake, table.target, shared, scope, found.differing, table.generations
                )
    report = Report(
        s.table,
        version,
        table.name,
        found.lake,
        found.replica,
        problems,
        normalised=canonical.emptied(shared),
        moving=found.moving,
        slice=(scope.slice, scope.slices),
        reader=lake.how,
        **details,
    )
    rows = found.lake.rows + found.replica.rows
    return Round(report, time.monotonic() - began, rows)


def _refused(table: Table, details: dict[str, Any]) -> None:
    """Say which keys no repair will settle: Delta holds more than one row of them."""
    log.warning(
        "key not unique in Delta: not compared, and not repaired",
        extra={
            "table": table.settings.verify.table,
            "target": table.name,
            "duplicate_keys": details["duplicate"],
            "sample": details["duplicate_keys"],
        },
    )
