"""The Delta side of an as-of comparison: the table at version V as a ClickHouse relation,
in the target's column types and as the producer publishes it.

1. ClickHouse reads the table itself where it can (local paths, s3://: the bootstrap's
   services/lake.py), at V through `delta_lake_snapshot_version`: hashed columns
   hashed as the producer hashes them, every column cast to the target's type;
2. else (ADLS, a catalog name, a table ClickHouse refuses, or a target with a Nullable
   struct, which ClickHouse's reader gives as a struct of NULLs: consumer/rebuild/
   lake_structs.py) today's readers copy the snapshot into a staging table
   (verify/snapshot.py), which the caller drops.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from clickhouse_connect.driver.exceptions import DatabaseError

from schemas.clickhouse import quote
from schemas.target import Target
from services.lake import LAKE_CODES, LakeUnreadableError, commit_millis, lake_column, locate
from services.lake_structs import ambiguous
from verify import hashed, snapshot
from verify.settings import VerifySettings

log = logging.getLogger(__name__)
Columns = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class LakeSide:
    """The Delta table at `version` as ClickHouse selects it: an expression per target column
    it shares, in the target's type (`rows`)."""

    version: int
    relation: str  # what the rows are selected from
    expressions: dict[str, str]  # target column -> its expression over `relation`
    names: list[str]  # the Delta table's columns at `version`
    how: str  # "ClickHouse" or the staging reader's name
    # The commit time of `version` (ms since the epoch), where ClickHouse read it: the time
    # of a repair's rows (verify/repair.py), and the age of what a round proved.
    committed_ms: int | None = None
    parameters: dict[str, str] = field(default_factory=dict, repr=False)  # may hold secrets
    settings: dict[str, Any] = field(default_factory=dict)

    def rows(self, columns: Columns) -> str:
        """SELECT of `columns` (shared with the target), in the target's types."""
        select = ", ".join(f"{self.expressions[name]} AS {quote(name)}" for name, _ in columns)
        return f"SELECT {select} FROM {self.relation}"  # noqa: S608 - quoted names

    @property
    def committed(self) -> str:
        """The commit time as a DateTime64 expression (the repair's time where unknown)."""
        if self.committed_ms is None:
            return "now64(3, 'UTC')"
        return f"fromUnixTimestamp64Milli(toInt64({self.committed_ms}), 'UTC')"


@contextmanager
def opened(
    settings: VerifySettings, client: Any, target: Target, columns: Columns, version: int
) -> Iterator[LakeSide]:
    """The lake side at `version`; a staging table it needed is dropped on exit."""
    found = _in_clickhouse(settings, client, columns, version)
    if found is not None:
        yield found
        return
    staging = Target(target.database, f"{target.table}__verify_{uuid.uuid4().hex[:8]}")
    try:
        yield _staged(settings, client, staging, columns, version)
    finally:
        client.command(f"DROP TABLE IF EXISTS {staging.name}")


def _in_clickhouse(
    settings: VerifySettings, client: Any, columns: Columns, version: int
) -> LakeSide | None:
    """1., or None where ClickHouse cannot read the table (the reason is logged)."""
    s = settings.verify
    structs = [name for name, kind in columns if ambiguous(quote(name), kind)]
    if structs:
        log.info("%s has Nullable structs (%s): staging it", s.table, ", ".join(structs))
        return None
    try:
        lake = locate(s.table, settings.storage)
        parameters = lake.query_parameters(version)
        at = {"delta_lake_snapshot_version": version}
        described = client.query(
            f"DESCRIBE TABLE {lake.table_sql()}", parameters=parameters, settings=at
        ).result_rows
    except LakeUnreadableError:
        return None
    except DatabaseError as exc:
        if exc.code not in LAKE_CODES:
            raise
        log.info("ClickHouse cannot read %s (code %s): staging it", s.table, exc.code)
        return None
    kinds = {str(row[0]): str(row[1]) for row in described}
    policy = s.column_policy
    expressions = {
        name: f"CAST({lake_column(name, kinds[name], name in policy.hashed)} AS {kind})"
        for name, kind in columns
        if name in kinds
    }
    committed = commit_millis(client, lake, version)
    return LakeSide(
        version, lake.table_sql(), expressions, list(kinds), "ClickHouse", committed, parameters, at
    )


def _staged(
    settings: VerifySettings, client: Any, staging: Target, columns: Columns, version: int
) -> LakeSide:
    """2.: the snapshot copied as verify's one-shot comparison copies it."""
    delta, policy = snapshot.open_version(settings, version), settings.verify.column_policy
    policy.check(delta.schema, settings.verify.table, version)
    shared = [(name, kind) for name, kind in columns if name in delta.names]
    hashes, _ = hashed.hashed_columns(policy, delta.schema, shared)
    snapshot.stage(client, staging, shared, delta, hashes)
    expressions = {name: quote(name) for name, _ in shared}
    return LakeSide(version, staging.name, expressions, list(delta.names), str(delta.route))
