"""`cdfbridge-verify` through each of its readers, timed as a whole process.

    python bench/verify_bench.py --rows 10000 --repeats 3

With --as-of, as-of rounds and the watcher instead (bench/verify_asof.py).

Spark writes two tables of the same rows and changes (inserts, then 5% updated and 1%
deleted): one plain, one with deletion vectors. Both are published and consumed into
ClickHouse in this process, then each (table, --reader) pair runs `python -m verify` cold,
`--repeats` times: wall seconds from start to exit, and the peak RSS of its process tree
(Python, and Spark's JVM when Spark reads).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import clickhouse_connect
from output import bars, save, table
from stages import PeakRss, start

from consumer.group.loop import Pipeline
from consumer.settings import ConsumerSettings
from producer.run import run
from producer.settings import ProducerSettings
from services.settings import ConnectionSettings
from services.spark_session import build_spark_session
from stack.fetch import lib_dir
from stack.settings import StackSettings

KINDS = {"plain": "", "deletion vectors": ", delta.enableDeletionVectors = true"}
READERS = ("auto", "spark")


def write(spark: Any, path: Path, rows: int, properties: str) -> int:
    """The table at path; returns its last version."""
    name = f"delta.`{path}`"
    statements = [
        f"CREATE TABLE {name} (id STRING, name STRING, age BIGINT) USING delta "
        f"TBLPROPERTIES (delta.enableChangeDataFeed = true{properties})",
        f"INSERT INTO {name} SELECT CAST(id AS STRING), concat('n', id), id % 90 "  # noqa: S608
        f"FROM range({rows})",
        f"UPDATE {name} SET age = age + 1 WHERE CAST(id AS BIGINT) % 20 = 0",  # noqa: S608
        f"DELETE FROM {name} WHERE CAST(id AS BIGINT) % 100 = 1",  # noqa: S608
    ]
    for statement in statements:
        spark.sql(statement)
    return len(statements) - 1


def replicate(
    spark: Any, settings: ConnectionSettings, path: Path, last: int, database: str
) -> str:
    """Publish and consume the table up to version `last`; returns its topic."""
    topic = f"bench_verify_{uuid.uuid4().hex[:8]}"
    source = {"table": str(path), "primary_key": "id", "topic": topic, "metrics_port": None}
    connections = settings.model_dump(include={"kafka", "schema_registry", "clickhouse"})
    run(ProducerSettings(**connections, source={**source, "until_version": last}), spark=spark)
    consumer = {"topic": topic, "group": f"{topic}-group", "metrics_port": 0, "batch_seconds": 0.3}
    connections["clickhouse"]["database"] = database
    Pipeline(ConsumerSettings(**connections, consumer=consumer), until_caught_up=True).run()
    return topic


def timed(path: Path, topic: str, reader: str, env: dict[str, str], log: Path) -> dict[str, Any]:
    args = ["verify", "--table", str(path), "--topic", topic, "--reader", reader]
    began = time.monotonic()
    process = start(args, env, log)
    peak = PeakRss(process.pid)
    peak.start()
    code = process.wait()
    peak.done.set()
    if code != 0:
        raise SystemExit(f"cdfbridge-verify exited {code}; see {log}")
    return {"wall_s": round(time.monotonic() - began, 2), "peak_rss_mib": peak.mib}


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, default=10_000, help="rows inserted per table")
    p.add_argument("--repeats", type=int, default=3, help="cold runs per table and reader")
    p.add_argument(
        "--as-of", action="store_true", help="time as-of rounds instead (bench/verify_asof.py)"
    )
    p.add_argument("--tables", type=int, default=0, help="--as-of: tables under one watcher")
    p.add_argument("--table-rows", type=int, default=100_000, help="--as-of: rows of each")
    p.add_argument(
        "--consumed", action="store_true", help="--tables: rounds at the consumed version"
    )
    p.add_argument("--interval", type=float, default=60.0, help="--as-of: seconds a table")
    p.add_argument("--watch-seconds", type=float, default=600.0, help="--as-of: watch for")
    p.add_argument("--load-seconds", type=float, default=0, help="--as-of: commits for")
    p.add_argument("--load-rows", type=int, default=1_000_000, help="--as-of: the load table")
    p.add_argument("--load-interval", type=float, default=5.0, help="--as-of: load rounds every")
    p.add_argument(
        "--load-ops", default="insert,update,merge,delete", help="--as-of: the commits, in turn"
    )
    args = p.parse_args()
    if args.as_of:
        import verify_asof

        verify_asof.main(args)
        return
    settings = ConnectionSettings()
    client = clickhouse_connect.get_client(dsn=settings.clickhouse.url)
    database = f"bench_verify_{uuid.uuid4().hex[:8]}"
    client.command(f"CREATE DATABASE `{database}`")
    results = []
    with tempfile.TemporaryDirectory() as directory:
        spark = build_spark_session("verify-bench", delta_jars=lib_dir(StackSettings(), "spark"))
        topics = {}
        for kind, properties in KINDS.items():
            path = Path(directory, kind.replace(" ", "_"))
            last = write(spark, path, args.rows, properties)
            topics[kind] = (path, replicate(spark, settings, path, last, database))
        spark.stop()
        env = {**os.environ, "CDFBRIDGE_CLICKHOUSE__DATABASE": database}
        for kind, (path, topic) in topics.items():
            for reader in READERS:
                log = Path(directory, f"{topic}-{reader}.log")
                runs = [timed(path, topic, reader, env, log) for _ in range(args.repeats)]
                chosen = log.read_text().split("read with ")[-1].splitlines()[0]
                walls = [r["wall_s"] for r in runs]
                results.append(
                    {"table": kind, "reader": reader, "route": chosen, "runs": runs}
                    | {"median_s": statistics.median(walls), "min_s": min(walls)}
                    | {"max_s": max(walls), "peak_rss_mib": max(r["peak_rss_mib"] for r in runs)}
                )
    client.command(f"DROP DATABASE `{database}`")
    headers = ("table", "--reader", "read with", "median s", "min–max s", "peak RSS MiB")
    rows = [
        (r["table"], r["reader"], r["route"], r["median_s"], f"{r['min_s']}–{r['max_s']}")
        + (r["peak_rss_mib"],)
        for r in results
    ]
    print(f"{args.rows:,} rows, {args.repeats} cold runs each\n" + table(headers, rows))
    labels = [f"{r['table']}, {r['route']}" for r in results]
    draw = bars(labels, [r["median_s"] for r in results], "s")
    paths = save("verify", results, draw, "cdfbridge-verify, whole process")
    print(f"\nwrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
