"""Freshness: how long from a Delta commit until its changes are in `<table>_current`.

    .venv/bin/python bench/freshness_bench.py [--commits 60] [--rows-per-commit 20000]

The demo generator commits --rows-per-commit changes every --interval seconds (the blog's
20,000 rows a second by default), while the producer (--poll-interval 0.5) and the consumer
(--batch-seconds, default 0.5) follow it as they would in production. Each commit's freshness
is the time from its commit timestamp in the Delta log until ClickHouse has stored every one
of its changes (polled every 0.1 s). Measuring starts once the pipeline has caught up with
the generator after Spark's start-up (the commit two back is fully stored), at least
--warmup-s seconds in; the backlog of the start-up is left out. Prints p50, p95, p99 and max,
and the first row: seconds from the stages' start (both cold, a new topic) until ClickHouse
holds a first change. Writes JSON and a PNG.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import clickhouse_connect
import pyarrow as pa
import pyarrow.compute as pc
import target
from deltalake import DeltaTable
from output import RESULTS, save, table
from stages import start

from services.settings import ConnectionSettings
from stack.generate import OPERATIONS, Generator


def expected_rows(path: str, first: int, last: int) -> dict[int, int]:
    """Changes per version as the producer publishes them (no update pre-images)."""
    feed = pa.RecordBatchReader.from_stream(
        DeltaTable(path).load_cdf(starting_version=first, ending_version=last)
    )
    counts: dict[int, int] = {}
    for batch in feed:
        kinds = batch["_change_type"].cast(pa.string())
        versions = pc.filter(batch["_commit_version"], pc.not_equal(kinds, "update_preimage"))
        for item in pc.value_counts(versions).to_pylist():
            version = int(item["values"])
            counts[version] = counts.get(version, 0) + int(item["counts"])
    return counts


def commit_times(path: str) -> dict[int, float]:
    """Commit timestamp (epoch seconds) of every version, from the Delta log."""
    return {int(c["version"]): c["timestamp"] / 1000 for c in DeltaTable(path).history()}


class Watcher(threading.Thread):
    """Records, for each version, when ClickHouse first held `seen` rows of it."""

    def __init__(self, client: Any, database: str) -> None:
        super().__init__(daemon=True)
        self.client, self.database = client, database
        self.samples: list[tuple[float, dict[int, int]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            self.samples.append((time.time(), target.inserted(self.client, self.database, "t")))

    def caught_up(self, version: int, rows: int) -> bool:
        return bool(self.samples) and self.samples[-1][1].get(version, 0) >= rows

    def visible_at(self, version: int, rows: int) -> float | None:
        return next((at for at, seen in self.samples if seen.get(version, 0) >= rows), None)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--commits", type=int, default=60, help="commits measured, after warm-up")
    p.add_argument("--rows-per-commit", type=int, default=20_000)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between commits")
    p.add_argument("--warmup-s", type=float, default=30.0, help="at least this long")
    p.add_argument("--batch-seconds", type=float, default=0.5, help="the consumer's")
    args = p.parse_args()

    settings = ConnectionSettings()
    client = clickhouse_connect.get_client(dsn=settings.clickhouse.url)
    watcher_client = clickhouse_connect.get_client(dsn=settings.clickhouse.url)
    database = f"bench_fresh_{uuid.uuid4().hex[:8]}"
    client.command(f"CREATE DATABASE `{database}`")
    target.create(client, database, "t")
    path = str(Path(tempfile.mkdtemp(prefix="cdfbridge-fresh-")) / "t")
    generator = Generator(path)
    topic = f"cdfbridge.bench_fresh_{uuid.uuid4().hex[:8]}"
    logs = RESULTS / "logs"
    launched = time.time()
    env = {
        **os.environ,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
        "CDFBRIDGE_CONSUMER__BATCH_SECONDS": str(args.batch_seconds),
    }
    stages = [
        start(
            [
                "producer",
                "--table",
                path,
                "--primary-key",
                "id",
                "--topic",
                topic,
                "--poll-interval",
                "0.5",
                "--metrics-port",
                "0",
            ],
            env,
            logs / f"{topic}.producer.log",
        ),
        start(
            ["consumer", "--topic", topic, "--table", "t", "run"],
            env,
            logs / f"{topic}.consumer.log",
        ),
    ]
    watcher = Watcher(watcher_client, database)
    watcher.start()
    began = time.monotonic()
    measured_from: int | None = None
    try:
        commit = 0
        while measured_from is None or commit < measured_from + args.commits:
            tick = began + commit * args.interval
            time.sleep(max(0.0, tick - time.monotonic()))
            version = generator.commit(OPERATIONS[commit % len(OPERATIONS)], args.rows_per_commit)
            warm = time.monotonic() - began >= args.warmup_s
            if (
                measured_from is None
                and warm
                and watcher.caught_up(version - 2, args.rows_per_commit)
            ):
                measured_from, first = commit, version
            commit += 1
            if any(s.poll() is not None for s in stages):
                raise SystemExit(f"a stage exited; logs in {logs}/{topic}.*.log")
        last = version
        expected = expected_rows(path, first, last)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
            watcher.visible_at(v, n) is None for v, n in expected.items()
        ):
            time.sleep(0.5)
    finally:
        watcher.done.set()
        for stage in stages:
            stage.send_signal(signal.SIGTERM)
            stage.wait(60)
        client.command(f"DROP DATABASE `{database}`")

    committed = commit_times(path)
    first_row = next((at - launched for at, seen in watcher.samples if any(seen.values())), None)
    lags = {v: watcher.visible_at(v, n) for v, n in expected.items()}
    missing = [v for v, at in lags.items() if at is None]
    freshness = sorted((at - committed[v]) for v, at in lags.items() if at is not None)
    result = {
        "commits": len(expected),
        "rows_per_commit": args.rows_per_commit,
        "interval_s": args.interval,
        "consumer_batch_seconds": args.batch_seconds,
        "never_visible": missing,
        "first_row_s": None if first_row is None else round(first_row, 2),
        "p50_s": round(_pct(freshness, 50), 2),
        "p95_s": round(_pct(freshness, 95), 2),
        "p99_s": round(_pct(freshness, 99), 2),
        "max_s": round(freshness[-1], 2),
        "mean_s": round(statistics.fmean(freshness), 2),
        "per_version_s": {v: round(at - committed[v], 3) for v, at in lags.items() if at},
    }
    print(
        table(
            (
                "commits",
                "rows/commit",
                "p50 s",
                "p95 s",
                "p99 s",
                "max s",
                "never visible",
                "first row s",
            ),
            [
                (
                    result["commits"],
                    args.rows_per_commit,
                    result["p50_s"],
                    result["p95_s"],
                    result["p99_s"],
                    result["max_s"],
                    len(missing),
                    result["first_row_s"],
                )
            ],
        )
    )

    def draw(axes: Any) -> None:
        versions = sorted(result["per_version_s"])  # type: ignore[arg-type]
        axes.plot(versions, [result["per_version_s"][v] for v in versions], marker=".")  # type: ignore[index]
        for q in ("p50_s", "p99_s"):
            axes.axhline(result[q], linestyle="--", linewidth=0.8, label=f"{q[:3]} {result[q]} s")
        axes.set_xlabel("Delta version")
        axes.set_ylabel("seconds to visible")
        axes.legend(fontsize=8)

    paths = save(
        "freshness", result, draw, f"commit → visible, {args.rows_per_commit:,} rows/commit"
    )
    print(f"\nwrote {paths[0]} and {paths[1]}")


def _pct(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if len(values) > 1
        else values[0]
    )


if __name__ == "__main__":
    main()
