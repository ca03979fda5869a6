"""Recovery: a producer killed with SIGKILL in the middle of a backfill, then started again.

    .venv/bin/python bench/recovery_bench.py [--rows 1000000] [--kill-after-chunks 1]

The backlog of producer_bench.py (built once, reused) is published by a cold producer. Once
it has committed --kill-after-chunks chunks and is half a second into the next, its process
tree (Python and the Spark JVM) gets SIGKILL, its transaction left open. A new producer is
started at once on the same topic. Prints the seconds from the restart until its first
chunk is committed (what read_committed consumers see then) and the start-up steps it
logged, then reads the topic back: every change once, none lost and none twice. Services:
CDFBRIDGE_* env vars, default the local stack.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from output import RESULTS, bars, save, table
from producer_bench import build_table
from stages import backfill

from services.settings import ConnectionSettings


def producer(path: Path, topic: str, last: int, log: Path) -> subprocess.Popen[bytes]:
    """A cold producer in a process group of its own, so that its JVM is killed with it."""
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
            [sys.executable, "-m", *backfill(str(path), topic, last)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def events(log: Path) -> list[dict[str, Any]]:
    lines = log.read_text(errors="replace").splitlines()
    return [json.loads(line[line.index("{") :]) for line in lines if '{"event"' in line]


def published(log: Path) -> int:
    return sum(e["event"] == "chunk_published" for e in events(log))


def wait_for(done: Any, proc: subprocess.Popen[bytes], timeout_s: float = 300) -> float:
    """Seconds until done() holds; SystemExit if the producer exits first."""
    began = time.monotonic()
    while not done():
        if proc.poll() not in (None, 0) or time.monotonic() - began > timeout_s:
            raise SystemExit(f"the producer ended ({proc.returncode}) or stalled")
        time.sleep(0.05)
    return time.monotonic() - began


def read_back(topic: str) -> tuple[int, int]:
    """(committed messages, distinct ones) of the data topic, read_committed until it has
    been quiet for 3 s."""
    kafka = ConnectionSettings().kafka.client_config()
    group = f"bench-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({**kafka, "group.id": group, "isolation.level": "read_committed"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        seen: set[bytes] = set()
        count, quiet = 0, 0
        while quiet < 3:
            messages = [m for m in consumer.consume(10_000, timeout=1) if not m.error()]
            quiet = 0 if messages else quiet + 1
            for message in messages:
                pair = (message.key() or b"") + b"\0" + (message.value() or b"")
                seen.add(hashlib.blake2b(pair, digest_size=16).digest())
            count += len(messages)
        return count, len(seen)
    finally:
        consumer.close()


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rows", type=int, default=1_000_000, help="backlog inserts")
    p.add_argument("--kill-after-chunks", type=int, default=1)
    p.add_argument("--dir", type=Path, default=Path(".stack/bench"), help="where tables are kept")
    args = p.parse_args()
    path = args.dir / f"blog_{args.rows}"
    last = build_table(path, args.rows)
    topic = f"bench.recovery.{uuid.uuid4().hex[:8]}"
    logs = RESULTS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    first_log, second_log = logs / f"{topic}.killed.log", logs / f"{topic}.restarted.log"

    first = producer(path, topic, last, first_log)
    wait_for(lambda: published(first_log) >= args.kill_after_chunks, first)
    time.sleep(0.5)  # into the next chunk's read or transaction
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    killed_after = published(first_log)

    restarted = time.monotonic()
    second = producer(path, topic, last, second_log)
    first_chunk_s = wait_for(lambda: published(second_log) >= 1, second)
    second.wait(600)
    total_s = time.monotonic() - restarted
    if second.returncode != 0:
        raise SystemExit(f"the restarted producer failed; see {second_log}")
    steps = [e for e in events(second_log) if e["event"] == "startup_step"]
    count, distinct = read_back(topic)
    result = {
        "backlog_inserts": args.rows,
        "chunks_before_kill": killed_after,
        "first_chunk_after_restart_s": round(first_chunk_s, 2),
        "restarted_run_s": round(total_s, 1),
        "messages": count,
        "distinct_messages": distinct,
        "steps": {s["step"]: s["ms"] for s in steps},
    }
    print(json.dumps(result))
    print(
        "\n"
        + table(
            (
                "backlog",
                "chunks before SIGKILL",
                "first chunk after restart s",
                "messages",
                "distinct",
            ),
            [(args.rows, killed_after, result["first_chunk_after_restart_s"], count, distinct)],
        )
    )
    print("\n" + table(("restart step", "ms"), [(s["step"], s["ms"]) for s in steps]))
    chart = bars([s["step"] for s in steps], [s["ms"] for s in steps], "ms")
    paths = save("recovery", result, chart, "the restarted producer's start-up steps")
    print(f"\nwrote {paths[0]}")
    if count != distinct:
        raise SystemExit(f"{count - distinct} changes were published twice")


if __name__ == "__main__":
    main()
