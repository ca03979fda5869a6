"""The watch case of bench/verify_asof.py (its step 4): --tables tables under one watcher,
each round stamped; per table the longest time between two of its rounds, the watcher's
CPU and the machine's, and how many tables each shared Kafka look was for."""

from __future__ import annotations

import itertools
import resource
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from output import RESULTS
from verify_consumed import consumed_lake
from verify_lake import LAKE, lake_table, replica
from verify_load import watched

from services.settings import ConnectionSettings
from verify.settings import VerifySettings


def watch_case(
    client: Any,
    database: str,
    tables: int,
    rows: int,
    interval: float,
    seconds: float,
    consumed: bool = False,
) -> dict[str, Any]:
    if consumed:
        entries, verify = consumed_lake(LAKE, tables, rows, RESULTS / "logs")
    else:
        path = lake_table(rows, "small")
        entries = [
            {"table": path, "primary_key": "id", "topic": f"t{i}", "target": f"t{i}"}
            for i in range(tables)
        ]
        verify = {"version": 0}
    for entry in entries:
        replica(client, database, entry["target"], entry["table"])
    connections = ConnectionSettings()
    settings_of = VerifySettings(
        kafka=connections.kafka,
        clickhouse={"url": connections.clickhouse.url, "database": database},
        verify={**verify, "interval_seconds": interval, "metrics_port": 0},
        tables=entries,
    )
    watch, rounds = watched(settings_of)
    looks = _counted(watch)
    thread = threading.Thread(target=watch.run)
    began, cpu, machine = time.monotonic(), _cpu(), _machine()
    thread.start()
    time.sleep(seconds)
    clients = _kafka_clients()
    watch.stop.set()
    thread.join()
    wall, used = time.monotonic() - began, _cpu() - cpu
    busy, total = (after - before for after, before in zip(_machine(), machine, strict=True))
    stamps: dict[str, list[float]] = {w.name: [] for w in watch.tables}
    for name, stamp, *_ in rounds:
        stamps[name].append(stamp)
    ends = {name: [began, *found, began + wall] for name, found in stamps.items()}
    gaps = [max(b - a for a, b in itertools.pairwise(found)) for found in ends.values()]
    return {
        "tables": tables,
        "consumed_version_looks": consumed,
        "rows_per_table": rows,
        "interval_s": interval,
        "seconds": round(wall, 1),
        "rounds": len(rounds),
        "kafka_clients": clients,
        "shared_looks": len(looks),  # Kafka looks for several tables at once, where made
        "tables_per_look": round(statistics.fmean(looks), 1) if looks else None,
        "longest_gap_s": round(max(gaps), 1),
        "watcher_cpu_percent": round(100 * used / wall, 1),  # of one core
        "machine_cpu_percent": round(100 * busy / total, 1),  # of all: ClickHouse's too
    }


def _counted(watch: Any) -> list[int]:
    """The number of tables each shared look at Kafka was for (KafkaLooks.together)."""
    counts: list[int] = []
    looks = watch.tables[0].consumed.looks
    together = getattr(looks, "together", None)
    if together is not None:

        def counting(due: Any) -> Any:
            counts.append(len(due))
            return together(due)

        looks.together = counting
    return counts


def _kafka_clients() -> int:
    """The librdkafka clients alive in this process: each runs one `rdk:main` thread."""
    names = (task / "comm" for task in Path("/proc/self/task").iterdir())
    return sum(1 for name in names if name.read_text().strip() == "rdk:main")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine() -> tuple[int, int]:
    """(busy, total) jiffies of every core so far, from /proc/stat."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)
