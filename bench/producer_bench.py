"""Producer throughput and memory on a backlog shaped like the blog's example table.

    python bench/producer_bench.py --rows 1000000 [--rows 5000000 ...] [--conf KEY=VALUE ...]

For each size: a Delta table (id string, name string, age long, created_at timestamp) of
`rows` inserts, then 5% of them updated and 1% deleted, written with delta-rs; then
`cdfbridge-producer --until-version <last>` publishes it to a fresh topic on the configured
broker (CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS, default the local stack). Prints rows/s and the
peak RSS of the producer's process tree (Python driver + Spark JVM), and writes JSON.

Then, unless --skip-halves, the producer's two halves run alone in a fresh process, so the
limit shows in the same run: Spark reading and encoding every chunk with nothing
published (from a cold JVM, as the producer starts), then Kafka publishing those encoded
chunks, one transaction each, with Spark idle. Both count from the first read or send,
so neither includes start-up.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime
from itertools import groupby
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from output import bars, save, table
from stages import PeakRss, backfill

from producer.encode.registry import TopicSchemas
from producer.encode.slices import Slice
from producer.lake.follow import follow
from producer.publish.publish import Publisher
from producer.publish.topics import ensure_topics
from producer.publish.transactions import BATCH_ROWS
from producer.read.source import DeltaSource
from producer.session import APP_NAME
from producer.settings import ProducerSettings
from services.spark_session import session_for
from stack.generate import SCHEMA

INSERT_BATCH = 250_000


def build_table(path: Path, rows: int) -> int:
    """The backlog table; reused when it exists. Returns its last version."""
    if DeltaTable.is_deltatable(str(path)):
        return int(DeltaTable(str(path)).version())
    config = {"delta.enableChangeDataFeed": "true"}
    now = pa.scalar(int(time.time() * 1e6), pa.timestamp("us", tz="UTC"))
    for start in range(0, rows, INSERT_BATCH):
        ids = pa.array([str(i) for i in range(start, min(rows, start + INSERT_BATCH))])
        n = len(ids)
        batch = pa.table(
            [ids, pa.array(["name"] * n), pa.array(range(n), pa.int64()), pa.repeat(now, n)],
            schema=SCHEMA,
        )
        write_deltalake(str(path), batch, mode="append", configuration=config)
    table = DeltaTable(str(path))
    updated = pa.table(
        {
            "id": [str(i) for i in range(0, rows, 20)],
            "age": pa.array([1] * len(range(0, rows, 20)), pa.int64()),
        }
    )
    table.merge(updated, "t.id = s.id", source_alias="s", target_alias="t").when_matched_update(
        {"age": "s.age"}
    ).execute()
    deleted = pa.table({"id": [str(i) for i in range(7, rows, 100)]})
    DeltaTable(str(path)).merge(
        deleted, "t.id = s.id", source_alias="s", target_alias="t"
    ).when_matched_delete().execute()
    return int(DeltaTable(str(path)).version())


def publish(
    path: Path | str, last_version: int, conf: list[str], env: dict[str, str] | None = None
) -> dict[str, float]:
    """One cold producer run over the backlog; env: its environment (default: ours)."""
    topic = f"bench.producer.{uuid.uuid4().hex[:8]}"
    spark_conf = [arg for pair in conf for arg in ("--conf", pair)]
    began, started_at = time.monotonic(), time.time()
    proc = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
        [sys.executable, "-m", *backfill(str(path), topic, last_version), *spark_conf],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    peak = PeakRss(proc.pid)
    peak.start()
    log = proc.stderr.read() if proc.stderr else ""  # until the producer exits
    proc.wait()
    peak.done.set()
    wall = time.monotonic() - began
    if proc.returncode != 0:
        raise SystemExit(f"producer failed ({proc.returncode}):\n{log[-3000:]}")
    events = [_event(line) for line in log.splitlines() if '{"event"' in line]
    chunks = [e for e in events if e["event"] == "chunk_published"]
    rows = sum(c["rows"] for c in chunks)
    # From the start event (Spark up, topics ready, producer fenced in) to the last commit.
    steady = chunks[-1]["at"] - next(e["at"] for e in events if e["event"] == "start")
    return {
        "rows": rows,
        "chunks": len(chunks),
        "wall_s": round(wall, 1),
        "first_chunk_s": round(chunks[0]["at"] - started_at, 1),  # from process start
        "rows_per_s_wall": round(rows / wall),
        "publishing_s": round(steady, 1),
        "rows_per_s_publishing": round(rows / steady),
        "transaction_s": round(sum(c["transaction_ms"] for c in chunks) / 1000, 1),
        "peak_rss_mib": peak.mib,
    }


def halves(path: Path, last_version: int, conf: list[str]) -> dict[str, float]:
    """Spark's half alone (read + encode, nothing sent), then Kafka's (send what it made)."""
    settings = ProducerSettings(
        spark={"conf": dict(pair.split("=", 1) for pair in conf)},
        source={
            "table": str(path),
            "primary_key": "id",
            "topic": f"bench.halves.{uuid.uuid4().hex[:8]}",
            "until_version": last_version,
            "metrics_port": None,
        },
    )
    config = settings.source
    source = DeltaSource(session_for(settings.spark, settings.storage, APP_NAME), config.table)
    schemas = TopicSchemas.connect(settings.schema_registry, config.topic_name, config.table)
    began = time.monotonic()
    slices: list[Slice] = []
    first_chunk_s = 0.0
    for item in follow(source, schemas, config, 0, None, threading.Event()):
        slices.append(item)
        if item.last_of_chunk and not first_chunk_s:
            first_chunk_s = time.monotonic() - began
    spark_s = time.monotonic() - began
    rows = sum(len(piece.rows) for piece in slices)
    first_rows = sum(len(piece.rows) for piece in slices if piece.chunk == slices[0].chunk)

    kafka = settings.kafka.client_config()
    ensure_topics(kafka, config.topic, config.partitions)
    publisher = Publisher(kafka, config.topic)
    publisher.start()
    began = time.monotonic()
    for chunk, pieces in groupby(slices, key=lambda piece: piece.chunk):  # in chunk order
        batches = [b for piece in pieces for b in piece.rows.to_batches(max_chunksize=BATCH_ROWS)]
        publisher.publish(batches, chunk.last, lambda: False)
    kafka_s = time.monotonic() - began
    publisher.close()
    return {
        "spark_alone_rows_per_s": round(rows / spark_s),
        "spark_first_chunk_s": round(first_chunk_s, 1),
        "spark_alone_after_first_chunk_rows_per_s": round(
            (rows - first_rows) / max(spark_s - first_chunk_s, 1e-9)
        ),
        "kafka_alone_rows_per_s": round(rows / kafka_s),
    }


def halves_in_a_fresh_process(path: Path, last_version: int, conf: list[str]) -> dict[str, float]:
    spark_conf = [arg for pair in conf for arg in ("--conf", pair)]
    command = [sys.executable, __file__, "--halves-of", str(path), str(last_version), *spark_conf]
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise SystemExit(f"timing the halves failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _event(line: str) -> dict[str, Any]:
    """A producer log line: `<date> <time>,<ms> INFO {json}`."""
    stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return {**json.loads(line[line.index("{") :]), "at": stamp}


def backlog_parser(description: str | None) -> argparse.ArgumentParser:
    """The options every producer benchmark takes: backlog sizes, where tables are kept,
    Spark settings for the producer."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, action="append", help="backlog size; repeatable")
    p.add_argument("--dir", type=Path, default=Path(".stack/bench"), help="where tables are kept")
    p.add_argument(
        "--conf", action="append", default=[], help="Spark KEY=VALUE for the producer; repeatable"
    )
    return p


def main() -> None:
    p = backlog_parser(__doc__)
    p.add_argument("--skip-halves", action="store_true", help="do not time Spark and Kafka alone")
    p.add_argument("--halves-of", nargs=2, metavar=("TABLE", "LAST"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.halves_of:  # the fresh process of halves_in_a_fresh_process
        print(json.dumps(halves(Path(args.halves_of[0]), int(args.halves_of[1]), args.conf)))
        return
    results = []
    for rows in args.rows or [1_000_000]:
        path = args.dir / f"blog_{rows}"
        last = build_table(path, rows)
        result = {"backlog_inserts": rows, **publish(path, last, args.conf)}
        if not args.skip_halves:
            result |= halves_in_a_fresh_process(path, last, args.conf)
        results.append(result)
        print(json.dumps(result), flush=True)
    header = ("backlog", "rows", "wall s", "rows/s wall", "rows/s publishing", "peak RSS MiB")
    keys = ("backlog_inserts", "rows", "wall_s", "rows_per_s_wall", "rows_per_s_publishing")
    print("\n" + table(header, [[r[k] for k in (*keys, "peak_rss_mib")] for r in results]))
    if not args.skip_halves:
        header = (
            "backlog",
            "producer rows/s publishing",
            "Spark alone rows/s",
            "its first chunk s",
            "Spark alone after it",
            "Kafka alone rows/s",
        )
        keys = (
            "backlog_inserts",
            "rows_per_s_publishing",
            "spark_alone_rows_per_s",
            "spark_first_chunk_s",
            "spark_alone_after_first_chunk_rows_per_s",
            "kafka_alone_rows_per_s",
        )
        print("\n" + table(header, [[r[k] for k in keys] for r in results]))
    labels = [
        f"{r['backlog_inserts'] // 1000:,}k {kind}"
        for r in results
        for kind in ("wall", "publishing")
    ]
    values = [r[f"rows_per_s_{kind}"] for r in results for kind in ("wall", "publishing")]
    paths = save("producer", results, bars(labels, values, "rows/s"), "producer rows/s")
    print(f"\nwrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
