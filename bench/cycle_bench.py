"""What one cycle costs per table at the head: each driver step the producer takes for a
table's new commit, and the Spark job that collects N tables' reads, against its floors.

    .venv/bin/python bench/cycle_bench.py [--tables 20] [--rounds 4] [--reader files|delta]

N Delta tables (the demo generator's shape, a checkpoint every 10 commits) each take a
commit of 1,000 inserts per round. Per round, in one warm session:
- the steps per table: the commit log's poll (producer/follow/commit_log.py), Delta's own log
  update (what each poll cost before), the read of the commit's changes in the snapshot
  already known (from the commit's files, or with `--reader delta` by Delta's change-feed
  reader: producer/read/file_read.py), and its encoding (producer/encode/encode.py);
- the cycle's job over the N encoded reads (producer/read/cycle.py: union, coalesced, one
  collect), the union's building (pairwise, as the cycle builds it, and as one chain)
  timed apart from its job, against the same reads collected one by one;
- the floor under both: the N commits' data files read as N Parquet scans unioned, and as
  one scan of N files. Spark spends per scan (its Hadoop configuration broadcast, planning)
  what a scan of many files spends once.
Prints the median of the rounds after the first (which warms the JVM), in milliseconds.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from output import table

from producer.encode.encode import Encoding, WireSchema
from producer.read.shared import PLACE, Sharing, shared
from producer.read.source import DeltaSource
from producer.read.union import balanced_union
from producer.session import APP_NAME
from producer.settings import ProducerSettings
from schemas.avro import key_schema, value_schema
from services.spark_session import session_for
from stack.generate import Generator


def timed(call: Callable[[], object]) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def data_files(path: str, version: int) -> list[str]:
    log = Path(path) / "_delta_log" / f"{version:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    return [str(Path(path) / a["add"]["path"]) for a in actions if "add" in a]


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tables", type=int, default=20)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument(
        "--reader",
        choices=("files", "delta"),
        default="files",
        help="read settled commits from their files (the default) or by Delta's reader",
    )
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cdfbridge-cycle-"))
    generators = [
        Generator(str(root / f"t{i}"), seed=i, checkpoint_interval=10) for i in range(args.tables)
    ]
    heads = [max(g.commit("insert", 1_000) for _ in range(3)) for g in generators]
    settings = ProducerSettings(source={"table": generators[0].path, "primary_key": "id"})
    spark = session_for(settings.spark, settings.storage, APP_NAME)
    sources = [DeltaSource(spark, g.path, args.reader == "files") for g in generators]
    schema = sources[0].schema_json(heads[0])
    wire = WireSchema(key_schema(schema, ["id"], "t"), 1), WireSchema(value_schema(schema, "t"), 1)
    encoding = Encoding(*wire, ["id"], include_preimage=False)
    for source, head in zip(sources, heads, strict=True):
        encoding.encode(source.changes(head, head)).toArrow()  # a known snapshot, a select
    spent: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for step, ms in one_round(spark, generators, sources, encoding).items():
            spent.setdefault(step, []).append(ms)
    rows = [(step, round(statistics.median(ms[1:] or ms), 1)) for step, ms in spent.items()]
    print(table(("step", "median ms"), rows))


def one_round(
    spark: Any, generators: list[Generator], sources: list[DeltaSource], encoding: Encoding
) -> dict[str, float]:
    """Each table commits once; each step timed (per table where it says so)."""
    from pyspark.sql import DataFrame
    from pyspark.sql.functions import lit

    heads = [g.commit("insert", 1_000) for g in generators]
    n, pairs = len(heads), list(zip(sources, heads, strict=True))
    spent = {
        "poll: the commit log, per table": timed(lambda: [s.head(h - 1) for s, h in pairs]) / n,
        "poll: Delta's log update, per table": timed(lambda: [s.latest_version() for s in sources])
        / n,
    }
    frames: list[Any] = []
    spent["read in the known snapshot, per table"] = (
        timed(lambda: frames.extend(s.changes(h, h) for s, h in pairs)) / n
    )
    encoded: list[Any] = []
    spent["encode (select built once), per table"] = (
        timed(lambda: encoded.extend(encoding.encode(f) for f in frames)) / n
    )

    unions: list[Any] = []

    def tagged() -> list[Any]:
        return [e.withColumn(PLACE, lit(str(i))) for i, e in enumerate(encoded)]

    spent[f"cycle: {n} reads tagged and unioned pairwise"] = timed(
        lambda: unions.append(balanced_union(tagged()))
    )
    spent[f"  (tagged and unioned as one chain, {n} deep)"] = timed(
        lambda: functools.reduce(DataFrame.union, tagged())
    )
    spent["cycle: their one job"] = timed(
        lambda: unions[0].coalesce(spark.sparkContext.defaultParallelism).toArrow()
    )
    plans = [s.file_plan(h, h) for s, h in pairs]
    if all(plan is not None for plan in plans):  # --reader files: the reads share one scan
        reads = [(str(i), Sharing(plan, encoding)) for i, plan in enumerate(plans) if plan]
        together: list[Any] = []
        spent[f"cycle, shared: {n} reads of one shape as one scan, built"] = timed(
            lambda: together.append(shared(spark, reads))
        )
        spent["cycle, shared: its one job"] = timed(
            lambda: together[0].coalesce(spark.sparkContext.defaultParallelism).toArrow()
        )
    spent[f"{n} reads, a job each"] = timed(lambda: [e.toArrow() for e in encoded])
    files = [f for g, h in zip(generators, heads, strict=True) for f in data_files(g.path, h)]
    scans = [spark.read.parquet(f) for f in files]
    spent[f"floor: {n} Parquet scans unioned"] = timed(
        lambda: functools.reduce(DataFrame.union, scans).toArrow()
    )
    spent[f"floor: one Parquet scan of {n} files"] = timed(
        lambda: spark.read.parquet(*files).toArrow()
    )
    return spent


if __name__ == "__main__":
    main()
