"""As-of rounds (verify/asof.py), timed in this process against the local stack:

    python bench/verify_bench.py --as-of --rows 20000000 --tables 100 --watch-seconds 900

1. equal: a Delta table of --rows narrow rows (id BIGINT, name STRING, n BIGINT) written by
   delta-rs (not timed), and its replica, loaded by ClickHouse from it as a bootstrap does.
   One round over the whole table, --repeats times: rows/s is the table's rows over the
   round's seconds. The floor beside it: each side's per-bucket hash query alone;
2. drift: one row deleted (`ALTER … DELETE`), one value changed (`ALTER … UPDATE`), one key
   inserted at a published version; one round finds them, one with repair mends them, and a
   last round says equal;
3. load: bench/verify_load.py, for --load-seconds;
4. watch: --tables tables of --table-rows rows under one watcher, --interval seconds a
   table, for --watch-seconds: per table the longest time between two of its rounds, and
   the process's CPU. The version is given (`--version`), unless --consumed: each table is
   then published and consumed, and each round looks for the version its group consumed
   (bench/verify_consumed.py).
Writes bench/results/verify_watch.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from typing import Any

import clickhouse_connect
from output import RESULTS
from verify_lake import LAKE, lake_table, replica
from verify_load import load_case
from verify_watch import watch_case

from services.settings import ConnectionSettings
from verify.asof import BUCKETS, Scope
from verify.asof_check import prepare, run_round
from verify.settings import VerifySettings


def settings(database: str, name: str, path: str, **verify: Any) -> VerifySettings:
    connections = ConnectionSettings()
    return VerifySettings(
        kafka=connections.kafka,
        clickhouse={"url": connections.clickhouse.url, "database": database},
        verify={"table": path, "clickhouse_table": name, "version": 0, **verify},
    )


def equal_case(client: Any, database: str, rows: int, repeats: int) -> dict[str, Any]:
    path = lake_table(rows, "narrow")
    replica(client, database, "big", path)
    found = prepare(settings(database, "big", path), client)
    rounds = [run_round(found, client, 0, Scope(found.keys)) for _ in range(repeats)]
    assert all(r.report.equal for r in rounds), rounds[0].report.render()  # noqa: S101
    seconds = sorted(r.seconds for r in rounds)
    floors = {side: _floor(client, found.target.name, path, side) for side in ("lake", "replica")}
    return {
        "rows": rows,
        "rows_compared": [rounds[0].report.delta.rows, rounds[0].report.clickhouse.rows],
        "seconds": [round(x, 3) for x in seconds],
        "rows_per_s": round(rows / statistics.median(seconds)),
        "floor_seconds": floors,
    }


def _floor(client: Any, name: str, path: str, side: str) -> float:
    """One side's per-bucket hash query alone, best of two."""
    source = "deltaLakeLocal({path:String})" if side == "lake" else f"{name} FINAL"
    query = (
        f"SELECT cityHash64(id) % {BUCKETS} AS b, count(), "  # noqa: S608 - our names
        f"sumWithOverflow(cityHash64(tuple(id, name, n))) FROM {source} GROUP BY b"
    )
    best = float("inf")
    for _ in range(2):
        began = time.monotonic()
        parameters = {"path": path} if side == "lake" else None
        client.query(query, parameters=parameters, settings={"delta_lake_snapshot_version": 0})
        best = min(best, time.monotonic() - began)
    return round(best, 3)


def drift_case(client: Any, database: str, rows: int) -> dict[str, Any]:
    path = lake_table(rows, "narrow")
    replica(client, database, "drift", path)
    found = prepare(settings(database, "drift", path), client)
    name, sync = found.target.name, "SETTINGS mutations_sync = 2"
    client.command(f"ALTER TABLE {name} DELETE WHERE id = 5 {sync}")
    client.command(f"ALTER TABLE {name} UPDATE name = 'changed' WHERE id = 6 {sync}")
    client.command(
        f"INSERT INTO {name} (id, name, n, _change_type, _commit_version, _commit_timestamp) "  # noqa: S608
        "VALUES (-1, 'ghost', 0, 'insert', 0, now64())"
    )
    first = run_round(found, client, 0, Scope(found.keys))
    mended = run_round(found, client, 0, Scope(found.keys), mend=True)
    last = run_round(found, client, 0, Scope(found.keys))
    report = first.report
    return {
        "found": [report.lost_keys, report.extra_keys, report.wrong_keys],
        "round_seconds": round(first.seconds, 3),
        "repair_round_seconds": round(mended.seconds, 3),
        "equal_after": last.report.equal,
    }


def main(args: argparse.Namespace) -> None:
    connections = ConnectionSettings()
    client = clickhouse_connect.get_client(dsn=connections.clickhouse.url)
    database = f"verify_bench_{uuid.uuid4().hex[:8]}"
    client.command(f"CREATE DATABASE {database}")
    try:
        result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d")}
        if args.rows:
            result["equal"] = equal_case(client, database, args.rows, args.repeats)
            result["drift"] = drift_case(client, database, args.rows)
        if args.load_seconds:
            result["load"] = load_case(
                database,
                LAKE,
                RESULTS / "logs",
                args.load_rows,
                args.load_seconds,
                args.load_interval,
                tuple(args.load_ops.split(",")),
            )
        if args.tables:
            result["watch"] = watch_case(
                *(client, database, args.tables, args.table_rows),
                *(args.interval, args.watch_seconds, args.consumed),
            )
    finally:
        client.command(f"DROP DATABASE IF EXISTS {database}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "verify_watch.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
