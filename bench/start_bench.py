"""What a table's start costs on the Delta side, step by step, alone and many at once.

    .venv/bin/python bench/start_bench.py [--tables 40] [--commits 3] [--at-once 1 4 16 40]

N Delta tables as lake_bench writes them (the demo generator's shape, delta-rs, no
checksum files) each take --commits commits of 1,000 inserts. In one warm Spark session,
each table's start is the producer's Delta-side steps, in order:
- log: DeltaSource (the head loaded by Kernel, the commit log opened);
- cdf_check: the Change Data Feed property, from the loaded snapshot;
- latest: the latest version (the column policy's check);
- schema: the schema at that version (RangeSchemas);
- estimates: the row estimates of versions 0..head (their commit files read);
- plan: the changes of 0..head planned as scans of the commits' files (all a read at
  the head costs before the cycle's job when it shares the cycle's scan);
- scan: that plan built as a DataFrame, and encode: its encoding's select (what a read
  the cycle reads alone builds);
- collect: that read collected alone (what the cycle's job does for it among others).
Prints each step's median over the tables started one at a time (after a warm-up), then
the wall time of every table's start with --at-once of them at a time, so whether the
starts wait (more at once is faster) or work (it is not) shows. Kafka's side is not in it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from output import table

from producer.encode.encode import Encoding, WireSchema
from producer.read.source import DeltaSource
from producer.session import APP_NAME
from producer.settings import ProducerSettings
from schemas.avro import key_schema, value_schema
from services.spark_session import session_for
from stack.generate import Generator

STEPS = ("log", "cdf_check", "latest", "schema", "estimates", "plan", "scan", "encode", "collect")


def start(spark: Any, path: str, times: dict[str, list[float]] | None = None) -> None:
    """One table's Delta-side start, each step timed into times."""

    def step(name: str, call: Callable[[], Any]) -> Any:
        began = time.perf_counter()
        found = call()
        if times is not None:
            times[name].append((time.perf_counter() - began) * 1000)
        return found

    source = step("log", lambda: DeltaSource(spark, path))
    step("cdf_check", source.check_change_feed)
    head = step("latest", source.latest_version)
    schema = step("schema", lambda: source.schema_json(head))
    step("estimates", lambda: source.row_estimates(0, head, head))
    key, value = key_schema(schema, ["id"], "t"), value_schema(schema, "t", ["id"])
    encoding = Encoding(WireSchema(key, 1), WireSchema(value, 2), ["id"], include_preimage=False)
    plan = step("plan", lambda: source.plan_changes(0, head))
    if plan is None:
        raise SystemExit(f"{path}: its changes are not read from its files")
    read = step("scan", lambda: source.read_planned(0, head, plan))
    frame = step("encode", lambda: encoding.encode(read))
    step("collect", frame.toArrow)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tables", type=int, default=40)
    p.add_argument("--commits", type=int, default=3)
    p.add_argument("--at-once", type=int, nargs="+", default=[1, 4, 16, 40])
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="cdfbridge-start-") as root:
        settings = ProducerSettings(source={"table": root, "primary_key": "id"})
        spark = session_for(settings.spark, settings.storage, APP_NAME)
        paths = []
        for i in range(args.tables):
            path = str(Path(root) / f"t{i:03d}")
            generator = Generator(path, seed=i, checkpoint_interval=10)
            for _ in range(args.commits):
                generator.commit("insert", 1_000)
            paths.append(path)
        for path in paths[:5]:  # the JVM warmed: classes loaded, code compiled
            start(spark, path)
        times: dict[str, list[float]] = {name: [] for name in STEPS}
        for path in paths:
            start(spark, path, times)
        medians = {name: round(statistics.median(ms), 1) for name, ms in times.items()}
        rows: list[list[Any]] = [[name, ms] for name, ms in medians.items()]
        rows.append(["all steps, summed", round(sum(medians.values()), 1)])
        print(table(["step, one table at a time", "median ms"], rows))
        walls = []
        for at_once in args.at_once:
            began = time.perf_counter()
            with ThreadPoolExecutor(at_once) as pool:
                list(pool.map(lambda path: start(spark, path), paths))
            wall = time.perf_counter() - began
            walls.append([at_once, round(wall, 2), round(wall / len(paths) * 1000, 1)])
        print(table(["at once", f"{len(paths)} starts, s", "per table, ms"], walls))
    spark.stop()


if __name__ == "__main__":
    main()
