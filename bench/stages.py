"""Running cdfbridge's stages as the benchmarks run them: subprocesses started cold, their
output in a log file, and the peak RSS of each process tree (Python + Spark JVM) sampled."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path


def backfill(table: str, topic: str, until_version: int) -> list[str]:
    """The producer's arguments to publish `table` up to `until_version`, then exit."""
    return [
        "producer",
        "--table",
        table,
        "--primary-key",
        "id",
        "--topic",
        topic,
        "--until-version",
        str(until_version),
        "--metrics-port",
        "0",
    ]


def start(
    args: list[str], env: dict[str, str], log: Path, module: bool = True
) -> subprocess.Popen[bytes]:
    """`python -m <args>`, e.g. ["consumer", "--topic", "t", "run"]; `python <args>` when
    not module (a script's path first)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", *args] if module else [sys.executable, *args]
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603 - our own modules, fixed arguments
            command, env=env, stdout=out, stderr=subprocess.STDOUT
        )


class PeakRss(threading.Thread):
    """Samples the RSS of a process tree every 0.2 s until `done` is set."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_kib, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            self.peak_kib = max(self.peak_kib, tree_rss_kib(self.pid))

    @property
    def mib(self) -> int:
        return round(self.peak_kib / 1024)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) spent so far by pid and all its descendants alive."""
    total, pending, tick = 0, [pid], os.sysconf("SC_CLK_TCK")
    while pending:
        current = pending.pop()
        try:
            stat = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(stat[11]) + int(stat[12])  # utime, stime: fields 14 and 15
            children = _children(current)
        except OSError:
            continue
        pending += [int(c) for c in children]
    return total / tick


def tree_rss_kib(pid: int) -> int:
    """RSS of pid and all its descendants."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            found = re.search(r"VmRSS:\s+(\d+)", status)
            total += int(found[1]) if found else 0
            children = _children(current)
        except OSError:
            continue
        pending += [int(c) for c in children]
    return total


def _children(pid: int) -> list[str]:
    """The child processes of every thread of pid (a thread that started one is its parent)."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += (task / "children").read_text().split()
        except OSError:
            continue
    return found


def kafka_clients(pid: int) -> int:
    """Long-lived librdkafka clients of a process: each runs one `rdk:main` thread."""
    found = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += (task / "comm").read_text().strip() == "rdk:main"
        except OSError:
            continue  # ended meanwhile
    return found
