"""A docker compose project run by the container tests, on free host ports, torn down after
(its last log lines kept in .stack/compose-<name>.log)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import free_port, unique
from tests.endpoints import Endpoints

ROOT = Path(__file__).parents[2]
# What the README tells a machine without an image registry to run, after images.sh.
LOCAL = ("docker-compose.yml", "stack/docker/compose.local.yml")
LONG_RUNNING = ("kafka", "registry", "clickhouse", "producer", "consumer", "verify-watch")


@dataclass(frozen=True)
class Project:
    name: str
    files: tuple[str, ...]
    env: dict[str, str]
    endpoints: Endpoints  # the published ports, as the host reaches them

    def run(self, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        files = [arg for name in self.files for arg in ("-f", name)]
        return subprocess.run(
            ["docker", "compose", "-p", self.name, *files, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    def compose(self, *args: str, check: bool = True, timeout_s: float = 600) -> str:
        done = self.run(*args, timeout_s=timeout_s)
        if check and done.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)}: {done.stderr[-3000:]}")
        return done.stdout

    def container(self, service: str) -> dict[str, Any]:
        ids = self.compose("ps", "-aq", service).split()
        assert ids, f"no container for {service}"
        found: dict[str, Any] = json.loads(
            subprocess.run(["docker", "inspect", ids[0]], capture_output=True, check=True).stdout
        )[0]
        return found

    def state(self, service: str) -> dict[str, Any]:
        state: dict[str, Any] = self.container(service)["State"]
        return state

    def healthy(self, service: str) -> bool:
        health = self.state(service).get("Health") or {}
        return bool(health.get("Status") == "healthy")

    def exited(self, service: str) -> bool:
        return bool(self.state(service)["Status"] == "exited")


@contextmanager
def running(files: tuple[str, ...], commits: int) -> Iterator[Project]:
    """`docker compose up -d` of files, with DEMO_COMMITS=commits; `down -v` after."""
    ports = {name: free_port() for name in ("KAFKA", "REGISTRY", "CLICKHOUSE")}
    env = {
        **os.environ,
        **{f"CDFBRIDGE_HOST_{name}_PORT": str(port) for name, port in ports.items()},
        "DEMO_COMMITS": str(commits),
    }
    kafka = f"127.0.0.1:{ports['KAFKA']}"
    registry = f"http://127.0.0.1:{ports['REGISTRY']}/apis/ccompat/v7"
    clickhouse = f"http://127.0.0.1:{ports['CLICKHOUSE']}"
    project = Project(
        unique("cdfbridge").replace("_", "-"),
        files,
        env,
        Endpoints(kafka, registry, clickhouse, kafka, registry, "docker compose"),
    )
    try:
        project.compose("up", "-d")
        yield project
    finally:
        logs = project.compose("logs", "--no-color", "--tail", "60", check=False)
        (ROOT / ".stack").mkdir(exist_ok=True)
        (ROOT / ".stack" / f"compose-{project.name}.log").write_text(logs)
        project.compose("down", "-v", "--timeout", "30", check=False)


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(2)
