"""One comparison, end to end: which version, the staging copy, the summary, the details.

1. version: --version, --latest (the table's), else the last one the producer published
   (its progress topic);
2. copy the Delta snapshot at that version into a staging table of the target's types
   (read by delta-rs, or by Spark for reader features delta-rs lacks: routes.py), as the
   producer publishes it: --exclude-columns left out, --hash-columns hashed (hashed.py);
3. compare counts and hashes; on a mismatch, find the lost, extra and wrong keys;
4. with --wait, repeat from 1 until equal or out of time (the consumer may be catching up);
   until then, a target table not created yet or nothing published yet is waited for too
   (a pipeline started together with verify, as docker-compose.yml starts it).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from schemas.changes import METADATA_COLUMNS
from schemas.clickhouse import quote
from schemas.errors import ConfigError
from schemas.target import Target
from services.clickhouse_client import connect, existing_columns
from services.progress_topic import Progress
from verify import canonical, compare, hashed, snapshot
from verify.errors import NothingToCompareError
from verify.report import Report
from verify.settings import VerifySettings

log = logging.getLogger(__name__)
POLL_SECONDS = 1.0


def verify(settings: VerifySettings) -> Report:
    s = settings.verify
    client = connect(settings.clickhouse)
    target = Target(settings.clickhouse.database, s.target_table, settings.clickhouse.cluster)
    deadline = time.monotonic() + s.wait_seconds
    columns = _until(deadline)(target_columns, client, target)
    _until(deadline)(_version, settings)
    keys = s.primary_key or sorting_key(client, target.local)
    if not keys:
        raise ConfigError(
            f"cannot tell the key of {target.name} (its table has no ORDER BY columns): pass "
            "--primary-key, or set clickhouse.cluster when it is a Distributed table"
        )
    staging = Target(target.database, f"{target.table}__verify_{uuid.uuid4().hex[:8]}")
    staged: int | None = None
    try:
        while True:
            version = _version(settings)
            if version != staged:
                shared, problems = _stage(settings, client, staging, columns, version)
                staged = version
            report = _compare(client, s.table, version, staging, target, shared, keys, problems)
            if report.equal or time.monotonic() >= deadline:
                return report
            log.info("not equal yet at version %d; retrying until the --wait runs out", version)
            time.sleep(POLL_SECONDS)
    finally:
        client.command(f"DROP TABLE IF EXISTS {staging.name}")


def _until(deadline: float) -> Retrying:
    """Retries NothingToCompareError (no table, nothing published) until deadline."""
    return Retrying(
        retry=retry_if_exception_type(NothingToCompareError),
        wait=wait_fixed(POLL_SECONDS),
        stop=stop_after_delay(max(0.0, deadline - time.monotonic())),
        before_sleep=lambda state: log.info(
            "waiting: %s", state.outcome and state.outcome.exception()
        ),
        reraise=True,
    )


def _compare(
    client: Any,
    source: str,
    version: int,
    staging: Target,
    target: Target,
    columns: Sequence[tuple[str, str]],
    keys: Sequence[str],
    problems: list[str],
) -> Report:
    delta = compare.summarize(client, staging.name, columns, keys)
    ours = compare.summarize(client, target.current_view, columns, keys)
    emptied = canonical.emptied(columns)
    report = Report(source, version, target.current_view, delta, ours, problems, normalised=emptied)
    if report.equal:
        return report
    found = compare.differences(client, staging.name, target.current_view, columns, keys)
    return Report(
        source, version, target.current_view, delta, ours, problems, normalised=emptied, **found
    )


def _stage(
    settings: VerifySettings,
    client: Any,
    staging: Target,
    target: Sequence[tuple[str, str]],
    version: int,
) -> tuple[list[tuple[str, str]], list[str]]:
    """Copy the snapshot at version, with the column policy applied; returns the columns
    compared and the schema problems found."""
    delta, policy = snapshot.open_version(settings, version), settings.verify.column_policy
    policy.check(delta.schema, settings.verify.table, version)
    published = [name for name in delta.names if name not in policy.exclude]
    shared, problems = shared_columns(target, published)
    hashes, unhashed = hashed.hashed_columns(policy, delta.schema, shared)
    snapshot.stage(client, staging, shared, delta, hashes)
    return shared, problems + unhashed


def _version(settings: VerifySettings) -> int:
    """--version, else --latest's version of the table, else the last one published."""
    s = settings.verify
    if s.version is not None:
        return s.version
    return snapshot.latest_version(settings) if s.latest else _published(settings)


def _published(settings: VerifySettings) -> int:
    topic = settings.verify.topic_name
    version = Progress(settings.kafka.client_config(), topic).last_version()
    if version is None:
        raise NothingToCompareError(
            f"nothing published to {topic} yet: run the producer first, or pass --version "
            "(and --topic if the producer was given one)"
        )
    return version


def target_columns(client: Any, target: Target) -> list[tuple[str, str]]:
    existing = existing_columns(client, target)
    if existing is None:
        raise NothingToCompareError(
            f"no ClickHouse table {target.name}: run the consumer first, or pass "
            "--clickhouse-table (and set CDFBRIDGE_CLICKHOUSE__DATABASE)"
        )
    return [(name, kind) for name, kind in existing.items() if name not in METADATA_COLUMNS]


def sorting_key(client: Any, target: Target) -> list[str]:
    """The ORDER BY columns, by their names as they are (system.tables' `sorting_key` quotes
    and escapes them as ClickHouse writes identifiers)."""
    rows = client.query(
        "SELECT name FROM system.columns WHERE database = {db:String} AND table = {t:String} "
        "AND is_in_sorting_key ORDER BY position",
        parameters={"db": target.database, "t": target.table},
    ).result_rows
    return [str(name) for (name,) in rows]


def shared_columns(
    ours: Sequence[tuple[str, str]], delta: Sequence[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """Columns both sides have, and a line for each column only one side has."""
    names = {name for name, _ in ours}
    problems = [
        f"column {quote(c)} is in the Delta table, not in ClickHouse"
        for c in delta
        if c not in names
    ]
    problems += [
        f"column {quote(n)} is in ClickHouse, not in the Delta table"
        for n, _ in ours
        if n not in delta
    ]
    return [(name, kind) for name, kind in ours if name in delta], problems
