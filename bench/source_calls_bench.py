"""What one small chunk costs the driver: each Spark and Delta call the producer makes per
chunk, timed in one warm session on a table of many small commits.

    .venv/bin/python bench/source_calls_bench.py [--versions 55] [--rows-per-commit 1000]

The table takes --versions commits of --rows-per-commit inserts (delta-rs, a checkpoint every
10 commits as Spark writes them); each call is timed --repeats times at the head and a few
versions behind it, and the milliseconds printed. These fixed costs per chunk, not the rows,
are what many small tables in one process spend the driver on.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from output import table

from producer.read.source import DeltaSource
from producer.session import APP_NAME
from producer.settings import ProducerSettings
from services.spark_session import session_for
from stack.generate import Generator


def timed(call: Callable[[], object], repeats: int) -> list[int]:
    """Milliseconds of each call after a first, warming one."""
    call()
    spent = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        spent.append(round((time.perf_counter() - began) * 1000))
    return spent


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--versions", type=int, default=55)
    p.add_argument("--rows-per-commit", type=int, default=1_000)
    p.add_argument("--behind", type=int, default=5, help="versions behind the head")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    path = str(Path(tempfile.mkdtemp(prefix="cdfbridge-calls-")) / "t")
    generator = Generator(path, checkpoint_interval=10)
    head = max(generator.commit("insert", args.rows_per_commit) for _ in range(args.versions))
    settings = ProducerSettings(source={"table": path, "primary_key": "id"})
    source = DeltaSource(session_for(settings.spark, settings.storage, APP_NAME), path)
    old = head - args.behind
    calls: dict[str, Callable[[], object]] = {
        "latest_version": source.latest_version,
        "schema at the head": lambda: source.schema_json(head),
        f"schema {args.behind} versions behind": lambda: source.schema_json(old),
        "row estimates of 3 versions (commit files)": lambda: source.row_estimates(
            head - 2, head, head
        ),
        "row estimates of 20 versions (commit files)": lambda: source.row_estimates(
            head - 19, head, head
        ),
        "row estimates of 54 versions (history)": lambda: source.row_estimates(
            head - 53, head, head
        ),
        "read + collect of the head's changes": lambda: source.changes(head, head).toArrow(),
        f"read + collect {args.behind} versions behind": lambda: source.changes(old, old).toArrow(),
    }
    rows = []
    for name, call in calls.items():
        spent = timed(call, args.repeats)
        rows.append((name, min(spent), sorted(spent)[len(spent) // 2], max(spent)))
    print(table(("call", "min ms", "median ms", "max ms"), rows))


if __name__ == "__main__":
    main()
