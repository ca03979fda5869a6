"""The watcher on a table that changes while the pipeline runs (bench/verify_asof.py's
`--load-seconds` case):

1. a Delta table of --load-rows rows (delta-rs), the producer and the consumer started as
   processes (`python -m producer`, `python -m consumer … run`), until the table is in
   ClickHouse;
2. a watcher in this process, one round every --load-interval seconds, while a commit of
   1,000 rows (--load-ops in turn: insert, update, merge, delete by default) is made every
   second for --load-seconds (an update, merge or delete of a large table takes longer:
   delta-rs rewrites the files it touches);
3. the commits stop; the last round is waited for. Every round's lost, extra, wrong and
   moving keys are kept: on an equal table any lost, extra or wrong key is a false mismatch.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from stages import start, tree_cpu_s

from services.progress_topic import Progress
from services.settings import ConnectionSettings
from stack.generate import Generator
from verify.consumed import Consumed
from verify.kafka_looks import KafkaLooks
from verify.settings import VerifySettings
from verify.watch import Watch

COMMIT_ROWS = 1000
OPERATIONS = ("insert", "update", "merge", "delete")


def load_case(
    database: str,
    root: Path,
    logs: Path,
    rows: int,
    seconds: float,
    interval: float,
    operations: tuple[str, ...] = OPERATIONS,
) -> dict[str, Any]:
    path, topic, group = str(root / f"load_{uuid.uuid4().hex[:8]}"), *_names()
    generator = Generator(path, seed=1)
    head = generator.commit("insert", rows)
    env = {**os.environ, "CDFBRIDGE_CLICKHOUSE__DATABASE": database}
    producer = start(
        ["producer", "--table", path, "--primary-key", "id", "--topic", topic]
        + ["--metrics-port", "0"],
        env,
        logs / f"{topic}.producer.log",
    )
    consumer = start(
        ["consumer", "--topic", topic, "--group", group, "run"],
        {**env, "CDFBRIDGE_CONSUMER__METRICS_PORT": "0"},
        logs / f"{topic}.consumer.log",
    )
    connections = ConnectionSettings()
    settings = VerifySettings(
        kafka=connections.kafka,
        clickhouse={"url": connections.clickhouse.url, "database": database},
        verify={"table": path, "topic": topic, "group": group}
        | {"interval_seconds": interval, "metrics_port": 0},
    )
    consumed = Consumed(KafkaLooks(connections.kafka.client_config()), topic, group)
    try:
        _until(lambda: consumed.version() == head, 600, "the table in ClickHouse")  # 1.
        watch, rounds = watched(settings)
        watcher = threading.Thread(target=watch.run)
        watcher.start()
        began, commits = time.monotonic(), 0
        while time.monotonic() - began < seconds:  # 2.
            tick = time.monotonic()
            head = generator.commit(operations[commits % len(operations)], COMMIT_ROWS)
            commits += 1
            time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
        committing = time.monotonic() - began
        _until(lambda: bool(rounds) and rounds[-1][2] == head, 600, "a round at the head")  # 3.
        watch.stop.set()
        watcher.join()
        cpu = {"producer": tree_cpu_s(producer.pid), "consumer": tree_cpu_s(consumer.pid)}
        looks = [_timed(consumed.version) for _ in range(10)]  # a round's Kafka look
    finally:
        for process in (producer, consumer):
            process.terminate()
            process.wait(120)
    published = Progress(connections.kafka.client_config(), topic).last_version()
    drift = [r[2:] for r in rounds if r[3] or r[4] or r[5]]
    return {
        "rows": rows,
        "operations": list(operations),
        "commits": commits,
        "commits_per_s": round(commits / committing, 2),
        "last_version": published,
        "rounds": len(rounds),
        "false_mismatch_rounds": len(drift),
        "first_mismatches": drift[:3],
        "moving_max": max(r[6] for r in rounds),
        "moving_median": statistics.median(r[6] for r in rounds),
        "round_seconds_median": round(statistics.median(r[7] for r in rounds), 3),
        "round_seconds_max": round(max(r[7] for r in rounds), 3),
        "stage_cpu_s": cpu,
        "kafka_look_seconds_median": round(statistics.median(looks), 3),
    }


def _names() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"verify_load_{suffix}", f"verify_load_group_{suffix}"


def watched(settings: VerifySettings) -> tuple[Watch, list[tuple[Any, ...]]]:
    """A watcher whose every round is kept: (table, monotonic time, version, lost, extra,
    wrong, moving, seconds)."""
    watch, rounds = Watch(settings), list[tuple[Any, ...]]()
    record = watch.metrics.record

    def kept(name: str, found: Any) -> None:
        r = found.report
        stamp = time.monotonic()
        rounds.append((name, stamp, r.version, r.lost, r.extra, r.wrong, r.moving, found.seconds))
        record(name, found)

    watch.metrics.record = kept  # type: ignore[method-assign]
    return watch, rounds


def _timed(call: Any) -> float:
    began = time.monotonic()
    call()
    return time.monotonic() - began


def _until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(1.0)
