"""End to end against the direct path, and the memory of both stages at two backlog sizes.

    .venv/bin/python bench/e2e_bench.py --rows 1000000 [--rows 5000000]

For each size, a Delta table like the blog's (id, name, age, created_at; the inserts, then 5%
updated and 1% deleted, as in producer_bench.py) is replicated twice, in the same run:
1. direct: delta-rs `load_cdf` → ClickHouse `insert_arrow`, no Kafka, which is what
   ClickHouse's reference script does;
2. cdfbridge: `cdfbridge-producer --until-version` and `cdfbridge-consumer run` started
   together (cold), until ClickHouse holds every change; then `cdfbridge-verify`;
3. bootstrap: a new subscriber of the topic 2. published, `cdfbridge-consumer bootstrap`
   (a process, from start to exit): ClickHouse reads the table at the last published
   version itself, then the group follows the topic; then `cdfbridge-verify`. The
   producer's cost is not in it: it is paid once, for every subscriber.
Prints rows/s of both and their ratio, the peak RSS of each stage, and writes JSON and a
PNG to bench/results/. Services: CDFBRIDGE_* env vars, default the local stack.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import clickhouse_connect
import pyarrow as pa
import pyarrow.compute as pc
import target
from deltalake import DeltaTable
from output import RESULTS, bars, save, table
from producer_bench import build_table
from stages import PeakRss, backfill, start

from services.settings import ConnectionSettings
from verify.check import verify
from verify.settings import VerifySettings


def direct(client: Any, database: str, path: Path, last: int) -> dict[str, Any]:
    """load_cdf → insert_arrow, batch by batch, into the same kind of table."""
    target.create(client, database, "direct")
    began, rows = time.monotonic(), 0
    feed = pa.RecordBatchReader.from_stream(
        DeltaTable(str(path)).load_cdf(starting_version=0, ending_version=last)
    )
    schema = pa.schema(_arrow(feed.schema))
    for batch in feed:
        changes = pa.Table.from_batches([batch]).cast(schema)  # ClickHouse reads no string_view
        changes = changes.filter(pc.not_equal(changes["_change_type"], "update_preimage"))
        client.insert_arrow("direct", changes, database)
        rows += changes.num_rows
    seconds = time.monotonic() - began
    return {"rows": rows, "seconds": round(seconds, 1), "rows_per_s": round(rows / seconds)}


def _arrow(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    fields = [(f.name, f.type) for f in schema]
    return [(n, pa.string() if t == pa.string_view() else t) for n, t in fields]


def pipeline(
    client: Any, settings: ConnectionSettings, database: str, path: Path, last: int, rows: int
) -> dict[str, Any]:
    """Producer and consumer started together; done when ClickHouse has every change."""
    topic = f"cdfbridge.bench_e2e_{uuid.uuid4().hex[:8]}"
    target.create(client, database, "pipeline")
    env = {**os.environ, "CDFBRIDGE_CLICKHOUSE__DATABASE": database}
    logs = RESULTS / "logs"
    began = time.monotonic()
    producer = start(backfill(str(path), topic, last), env, logs / f"{topic}.producer.log")
    consumer = start(
        ["consumer", "--topic", topic, "--table", "pipeline", "run"],
        # A group of its own: one a previous size's consumer just left may hold the join
        # back until that member's session times out.
        {**env, "CDFBRIDGE_CONSUMER__METRICS_PORT": "0", "CDFBRIDGE_CONSUMER__GROUP": topic},
        logs / f"{topic}.consumer.log",
    )
    peaks = {"producer": PeakRss(producer.pid), "consumer": PeakRss(consumer.pid)}
    for peak in peaks.values():
        peak.start()
    first_row = None
    try:
        while (stored := target.inserted_total(client, database, "pipeline")) < rows:
            if first_row is None and stored:
                first_row = time.monotonic() - began
            if producer.poll() not in (None, 0) or consumer.poll() is not None:
                raise SystemExit(f"a stage failed; logs in {logs}/{topic}.*.log")
            time.sleep(0.1)
        seconds = time.monotonic() - began
    finally:
        for stage in (producer, consumer):
            if stage.poll() is None:
                stage.send_signal(signal.SIGTERM)  # both drain and exit 0
            stage.wait(60)
        for peak in peaks.values():
            peak.done.set()
    report = verify(
        VerifySettings(
            kafka=settings.kafka,
            clickhouse=settings.clickhouse.model_copy(update={"database": database}),
            verify={"table": str(path), "topic": topic, "clickhouse_table": "pipeline"},
        )
    )
    return {
        "topic": topic,
        "rows": stored,
        "seconds": round(seconds, 1),
        "rows_per_s": round(stored / seconds),
        "first_row_s": round(first_row or 0, 1),
        "producer_peak_rss_mib": peaks["producer"].mib,
        "consumer_peak_rss_mib": peaks["consumer"].mib,
        "verify_equal": report.equal,
    }


def bootstrap(
    settings: ConnectionSettings, database: str, path: Path, topic: str
) -> dict[str, Any]:
    """A new subscriber's complete table: `cdfbridge-consumer bootstrap`, timed as a process."""
    group = f"{topic}-bootstrap"
    env = {
        **os.environ,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
        "CDFBRIDGE_CONSUMER__GROUP": group,
    }
    log = RESULTS / "logs" / f"{topic}.bootstrap.log"
    began = time.monotonic()
    done = start(["consumer", "--topic", topic, "--table", "bootstrapped", "bootstrap"], env, log)
    if done.wait() != 0:
        raise SystemExit(f"bootstrap failed; its log: {log}")
    seconds = time.monotonic() - began
    report = verify(
        VerifySettings(
            kafka=settings.kafka,
            clickhouse=settings.clickhouse.model_copy(update={"database": database}),
            verify={"table": str(path), "topic": topic, "clickhouse_table": "bootstrapped"},
        )
    )
    return {"seconds": round(seconds, 1), "verify_equal": report.equal}


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, action="append", help="backlog inserts; repeatable")
    p.add_argument("--dir", type=Path, default=Path(".stack/bench"), help="where tables are kept")
    args = p.parse_args()
    settings = ConnectionSettings()
    client = clickhouse_connect.get_client(dsn=settings.clickhouse.url)
    results = []
    for rows in args.rows or [1_000_000]:
        path = (args.dir / f"blog_{rows}").resolve()  # ClickHouse reads it by this path
        last = build_table(path, rows)
        database = f"bench_e2e_{uuid.uuid4().hex[:8]}"
        client.command(f"CREATE DATABASE `{database}`")
        try:
            straight = direct(client, database, path, last)
            ours = pipeline(client, settings, database, path, last, straight["rows"])
            lake = bootstrap(settings, database, path, ours["topic"])
        finally:
            client.command(f"DROP DATABASE `{database}`")
        result = {"backlog_inserts": rows, "direct": straight, "cdfbridge": ours, "bootstrap": lake}
        result["ratio"] = round(ours["rows_per_s"] / straight["rows_per_s"], 3)
        results.append(result)
    headers = (
        "backlog",
        "changes",
        "direct rows/s",
        "cdfbridge rows/s",
        "ratio",
        "first row in ClickHouse after s",
        "producer peak RSS MiB",
        "consumer peak RSS MiB",
        "verify",
        "direct s",
        "bootstrap s",
        "bootstrap verify",
    )
    print(
        table(
            headers,
            [
                (
                    r["backlog_inserts"],
                    r["direct"]["rows"],
                    r["direct"]["rows_per_s"],
                    r["cdfbridge"]["rows_per_s"],
                    f"{r['ratio']:.2f}×",
                    r["cdfbridge"]["first_row_s"],
                    r["cdfbridge"]["producer_peak_rss_mib"],
                    r["cdfbridge"]["consumer_peak_rss_mib"],
                    "equal" if r["cdfbridge"]["verify_equal"] else "NOT EQUAL",
                    r["direct"]["seconds"],
                    r["bootstrap"]["seconds"],
                    "equal" if r["bootstrap"]["verify_equal"] else "NOT EQUAL",
                )
                for r in results
            ],
        )
    )
    labels = [
        f"{r['backlog_inserts'] // 1000:,}k {kind}"
        for r in results
        for kind in ("direct", "cdfbridge")
    ]
    values = [r[kind]["rows_per_s"] for r in results for kind in ("direct", "cdfbridge")]
    paths = save("e2e", results, bars(labels, values, "rows/s"), "end to end vs direct path")
    print(f"\nwrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
