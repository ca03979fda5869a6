"""A complete table three ways, in one run: bootstrapped from the lake, loaded by hand with
ClickHouse's own Delta reader, and rebuilt by replaying the topic.

    .venv/bin/python bench/bootstrap_bench.py --rows 5000000

The table is producer_bench.py's backlog (`rows` inserts, then 5% updated and 1% deleted),
published whole by `cdfbridge-producer --until-version` first (not timed). Then, each into a
table of its own in a fresh database:
(a) lake: `rebuild(source="lake")`, called in this process (as `cdfbridge-consumer rebuild
    --from-lake` runs it, without the interpreter's start): ClickHouse loads the table at the
    last published version, the group follows the topic from there, the table is swapped
    in. Its INSERT … SELECT alone is printed too, and the whole command as a process;
(b) native: one hand-written `INSERT INTO … SELECT … FROM deltaLakeLocal(…)` with the same
    columns into an identical table: ClickHouse's own speed;
(c) replay: `cdfbridge-consumer rebuild --from-topic` (a process): every change read back
    from Kafka.
rows/s is the complete table's rows (the Delta table's row count) over the seconds each took,
so the three compare as "time to a complete table". (a) and (b) run twice, alternately,
and the faster of each counts (the first read of the files is the slower one).
`cdfbridge-verify` checks (a) and (c).
Appends a record to bench/results/bootstrap.json. Services: CDFBRIDGE_* env vars, default
the local stack.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import clickhouse_connect
import target
from deltalake import DeltaTable
from output import RESULTS, table
from producer_bench import build_table
from stages import backfill

from consumer.tables.table import create_table_sql
from schemas.target import Target
from services.settings import ConnectionSettings
from verify.check import verify
from verify.settings import VerifySettings


def publish(path: Path, topic: str, last: int) -> None:
    log = RESULTS / "logs" / f"{topic}.producer.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        done = subprocess.run(  # noqa: S603 - our own module
            [sys.executable, "-m", *backfill(str(path), topic, last)], stdout=out, stderr=out
        )
    if done.returncode:
        raise SystemExit(f"the producer failed; its log: {log}")


def rebuild(topic: str, database: str, name: str, source: str) -> float:
    """Seconds `cdfbridge-consumer rebuild --from-<source>` takes, as a process."""
    env = {
        **os.environ,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
        "CDFBRIDGE_CONSUMER__GROUP": f"{topic}-{name}",
    }
    command = ["consumer", "--topic", topic, "--table", name, "rebuild", f"--from-{source}"]
    log = RESULTS / "logs" / f"{topic}.{name}.log"
    began = time.monotonic()
    with log.open("wb") as out:
        done = subprocess.run(  # noqa: S603 - our own module
            [sys.executable, "-m", *command], env=env, stdout=out, stderr=out
        )
    if done.returncode:
        raise SystemExit(f"rebuild --from-{source} failed; its log: {log}")
    return time.monotonic() - began


class LoadSeconds(logging.Handler):
    """The seconds consumer/rebuild/bootstrap.py logs for its INSERT … SELECT."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        self.seconds = float(getattr(record, "seconds", self.seconds))


def lake(topic: str, database: str, name: str) -> tuple[float, float, dict[str, float]]:
    """(seconds of rebuild(source="lake") in this process, seconds of its load alone, its
    steps' seconds)."""
    from consumer.rebuild.steps import rebuild as rebuild_table
    from consumer.settings import load

    settings = load(topic_flags=[topic], table=name, group=f"{topic}-{name}")
    settings = settings.model_copy(
        update={"clickhouse": settings.clickhouse.model_copy(update={"database": database})}
    )
    handler = LoadSeconds()
    logging.getLogger("consumer.rebuild.bootstrap").addHandler(handler)
    logging.getLogger("consumer.rebuild.bootstrap").setLevel(logging.INFO)
    began = time.monotonic()
    done = rebuild_table(settings, source="lake")
    return time.monotonic() - began, handler.seconds, done.seconds


def native(client: Any, database: str, path: Path, last: int, name: str) -> float:
    """Seconds of one INSERT … SELECT from ClickHouse's Delta reader into a table made as the
    consumer makes it (without target.py's counting view)."""
    made = Target(database, name)
    client.command(create_table_sql(made, target.COLUMNS, ["id"], 10_000))
    began = time.monotonic()
    client.command(
        f"INSERT INTO `{database}`.`{name}` (id, name, age, created_at, _change_type, "  # noqa: S608
        "_commit_version, _commit_timestamp) SELECT id, name, age, created_at, 'snapshot', "
        f"{last}, now64(6) FROM deltaLakeLocal({{p:String}})",
        parameters={"p": str(path)},
        settings={"delta_lake_snapshot_version": last, "insert_deduplicate": 0},
    )
    return time.monotonic() - began


def _row(path: str, seconds: float, per_s: int, verified: str) -> tuple[str, str, int, str]:
    return path, f"{seconds:.2f}", per_s, verified


def _said(equal: bool) -> str:
    return "equal" if equal else "NOT EQUAL"


def equal(settings: ConnectionSettings, database: str, path: Path, topic: str, name: str) -> bool:
    report = verify(
        VerifySettings(
            kafka=settings.kafka,
            clickhouse=settings.clickhouse.model_copy(update={"database": database}),
            verify={"table": str(path), "topic": topic, "clickhouse_table": name},
        )
    )
    return report.equal


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, default=1_000_000, help="backlog inserts")
    p.add_argument("--dir", type=Path, default=Path(".stack/bench"), help="where tables are kept")
    args = p.parse_args()
    settings = ConnectionSettings()
    client = clickhouse_connect.get_client(dsn=settings.clickhouse.url)
    path = (args.dir / f"blog_{args.rows}").resolve()  # ClickHouse reads it by this path
    last = build_table(path, args.rows)
    rows = DeltaTable(str(path)).to_pyarrow_dataset().count_rows()
    topic = f"cdfbridge.bench_bootstrap_{uuid.uuid4().hex[:8]}"
    publish(path, topic, last)
    database = f"bench_bootstrap_{uuid.uuid4().hex[:8]}"
    client.command(f"CREATE DATABASE `{database}`")
    try:
        lakes = [lake(topic, database, "lake")]
        natives = [native(client, database, path, last, "n1")]
        lakes.append(lake(topic, database, "lake2"))
        natives.append(native(client, database, path, last, "n2"))
        (took, load_s, steps), native_s = min(lakes), min(natives)
        process_s = rebuild(topic, database, "lake3", "lake")
        seconds = {
            "lake": took,
            "native": native_s,
            "replay": rebuild(topic, database, "replay", "topic"),
        }
        equal_lake = equal(settings, database, path, topic, "lake")
        equal_replay = equal(settings, database, path, topic, "replay")
    finally:
        client.command(f"DROP DATABASE `{database}`")
    speed = {name: round(rows / s) for name, s in seconds.items()}
    record = {
        "rows": args.rows,
        "table_rows": rows,
        "lake_rows_per_s": speed["lake"],
        "native_rows_per_s": speed["native"],
        "replay_rows_per_s": speed["replay"],
        "verify_equal": equal_lake and equal_replay,
        "seconds": {name: round(s, 2) for name, s in seconds.items()},
        "lake_load_s": round(load_s, 2),
        "lake_process_s": round(process_s, 2),
        "lake_steps_s": steps,
    }
    lines = [
        ("(a) lake bootstrap, in process", seconds["lake"], speed["lake"], _said(equal_lake)),
        ("    its INSERT … SELECT alone", load_s, round(rows / load_s), "-"),
        ("    as a process: rebuild --from-lake", process_s, round(rows / process_s), "-"),
        ("(b) native INSERT … SELECT", seconds["native"], speed["native"], "-"),
        (
            "(c) replay: rebuild --from-topic",
            seconds["replay"],
            speed["replay"],
            _said(equal_replay),
        ),
    ]
    print(table(("path", "seconds", "table rows/s", "verify"), [_row(*line) for line in lines]))
    print(f"(a)'s steps, seconds: {steps}")
    print(
        f"\nlake / native {speed['lake'] / speed['native']:.2f}× (goal ≥ 0.8×), "
        f"lake / replay {speed['lake'] / speed['replay']:.2f}× (goal ≥ 3×)"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    found = RESULTS / "bootstrap.json"
    history = json.loads(found.read_text()) if found.exists() else []
    found.write_text(json.dumps([*history, record], indent=2))
    print(f"appended to {found}")


if __name__ == "__main__":
    main()
