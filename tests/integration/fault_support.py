"""Running our processes the way containers run them, and breaking them on a seeded schedule."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# A supervisor restarts a process that was killed or gave up on a service (exit 3),
# as `restart: on-failure` would; any other exit is a finding.
RESTARTED_EXITS = frozenset({-signal.SIGKILL, 3})


@dataclass(frozen=True)
class Scale:
    commits: int
    rows_per_commit: int
    interval_s: float
    kills: int  # of the producer, and as many of the consumer


SMALL = Scale(commits=40, rows_per_commit=300, interval_s=1.0, kills=2)
LARGE = Scale(commits=300, rows_per_commit=20_000, interval_s=1.0, kills=5)


@dataclass(frozen=True)
class Fault:
    at_s: float  # after the generator started
    action: str  # "kill producer", "kill consumer", "restart kafka", "restart clickhouse"


def schedule(rng: random.Random, window_s: float, kills: int) -> list[Fault]:
    """Kills and one restart of each service at random points inside the window."""
    actions = ["kill producer", "kill consumer"] * kills + ["restart kafka", "restart clickhouse"]
    rng.shuffle(actions)
    times = sorted(rng.uniform(0.1 * window_s, 0.9 * window_s) for _ in actions)
    return [Fault(round(t, 1), a) for t, a in zip(times, actions, strict=True)]


@dataclass
class Supervised:
    """One process in its own process group, so a kill takes its JVM with it."""

    name: str
    argv: Sequence[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    history: list[str] = field(default_factory=list)

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.history.append(f"started pid {self.process.pid}")

    def kill(self) -> None:
        """kill -9 and start again."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.history.append("killed -9")
        self.start()

    def restart_if_exited(self) -> None:
        assert self.process is not None
        code = self.process.poll()
        if code is None:
            return
        self.history.append(f"exited {code}")
        if code not in RESTARTED_EXITS:
            raise AssertionError(f"{self.name} exited {code}:\n{self.tail()}")
        self.start()

    def stop(self, timeout_s: float = 120) -> int:
        """SIGTERM, as a container stop sends; returns the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout_s)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


class Supervisor(threading.Thread):
    """Restarts what exits while the test does blocking work (service restarts, checks)."""

    def __init__(self, processes: Sequence[Supervised]) -> None:
        super().__init__(daemon=True)
        self.processes = processes
        self.lock = threading.Lock()  # held while the test kills, so both never act at once
        self.done = threading.Event()
        self.failure: AssertionError | None = None

    def run(self) -> None:
        while not self.done.wait(0.5):
            with self.lock:
                try:
                    for process in self.processes:
                        process.restart_if_exited()
                except AssertionError as exc:
                    self.failure = exc
                    return

    def check(self) -> None:
        if self.failure is not None:
            raise self.failure


def command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def wait_until(
    condition: Callable[[], bool], timeout_s: float, what: str, supervisor: Supervisor
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        supervisor.check()
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s:.0f} s"
        time.sleep(1)
