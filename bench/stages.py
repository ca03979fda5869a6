"""Running cdfbridge's stages as the benchmarks run them: subprocesses started cold, their
output in a log file, and the peak RSS of each process tree (Python + Spark JVM) sampled."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from producer_bench import tree_rss_kib


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`python -m <args>`, e.g. ["consumer", "--topic", "t", "run"]."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603 - our own modules, fixed arguments
            [sys.executable, "-m", *args], env=env, stdout=out, stderr=subprocess.STDOUT
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
