"""docker-compose.yml run for real, on a local Docker engine, as the README says.

stack/docker/images.sh builds the images (starting dockerd, and installing it with apt-get,
when none answers); stack/docker/compose.local.yml swaps only the third-party images. The
tests then run in order on one compose project: every healthcheck turns healthy, SIGKILLed
producer and consumer containers come back by their restart policy, verify exits 0 with
nothing lost or doubled, and `docker compose stop` drains the consumer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port, unique
from tests.endpoints import Endpoints
from tests.producer_helpers import read_topic

pytestmark = pytest.mark.containers

ROOT = Path(__file__).parents[2]
# What the README tells a machine without an image registry to run, after images.sh.
FILES = ["-f", "docker-compose.yml", "-f", "stack/docker/compose.local.yml"]
LONG_RUNNING = ("kafka", "registry", "clickhouse", "producer", "consumer")
TOPIC = "cdfbridge.demo"
COMMITS = 40  # one a second: long enough to kill both stages while it changes


@dataclass(frozen=True)
class Project:
    name: str
    env: dict[str, str]
    endpoints: Endpoints  # the published ports, as the host reaches them

    def compose(self, *args: str, check: bool = True, timeout_s: float = 600) -> str:
        done = subprocess.run(
            ["docker", "compose", "-p", self.name, *FILES, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
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


@pytest.fixture(scope="module")
def project(images: None) -> Iterator[Project]:
    ports = {name: free_port() for name in ("KAFKA", "REGISTRY", "CLICKHOUSE")}
    env = {
        **os.environ,
        **{f"CDFBRIDGE_HOST_{name}_PORT": str(port) for name, port in ports.items()},
        "DEMO_COMMITS": str(COMMITS),
    }
    kafka = f"127.0.0.1:{ports['KAFKA']}"
    registry = f"http://127.0.0.1:{ports['REGISTRY']}/apis/ccompat/v7"
    clickhouse = f"http://127.0.0.1:{ports['CLICKHOUSE']}"
    found = Project(
        unique("cdfbridge").replace("_", "-"),
        env,
        Endpoints(kafka, registry, clickhouse, kafka, registry, "docker compose"),
    )
    try:
        found.compose("up", "-d")
        yield found
    finally:
        logs = found.compose("logs", "--no-color", "--tail", "40", check=False)
        (ROOT / ".stack").mkdir(exist_ok=True)
        (ROOT / ".stack" / "compose-test.log").write_text(logs)
        found.compose("down", "-v", "--timeout", "30", check=False)


def wait_until(check: Callable[[], bool], what: str, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:.0f} s"
        time.sleep(2)


def healthy(project: Project, service: str) -> bool:
    health = project.state(service).get("Health") or {}
    return bool(health.get("Status") == "healthy")


def test_every_service_turns_healthy(project: Project) -> None:
    for service in LONG_RUNNING:
        wait_until(partial(healthy, project, service), f"{service} healthy")


def test_sigkilled_producer_and_consumer_come_back_by_their_restart_policy(
    project: Project,
) -> None:
    wait_until(lambda: rows(project) > 0, "first rows in ClickHouse")
    for service in ("producer", "consumer"):
        before = project.container(service)["RestartCount"]
        pid = project.state(service)["Pid"]
        assert isinstance(pid, int) and pid > 0
        os.kill(pid, signal.SIGKILL)  # as the kernel's OOM killer would: no handler runs
        wait_until(partial(restarted, project, service, before), f"{service} restarted")
        wait_until(partial(healthy, project, service), f"{service} healthy again")


def restarted(project: Project, service: str, before: object) -> bool:
    return bool(project.container(service)["RestartCount"] != before)


def test_compose_stop_drains_the_consumer_and_commits_what_it_wrote(project: Project) -> None:
    project.compose("stop", "consumer")  # SIGTERM, as `docker stop` sends it
    assert project.state("consumer")["ExitCode"] == 0, project.compose("logs", "consumer")
    log = project.compose("logs", "--no-color", "--no-log-prefix", "consumer").splitlines()
    lines = [json.loads(line) for line in log if line.startswith("{")]
    assert lines and lines[-1]["message"] == "stopped", log[-20:]
    written: dict[int, int] = {}
    for line in lines:
        if line["message"] == "batch written":
            partition = line["partition"]
            written[partition] = max(written.get(partition, -1), line["last_offset"])
    assert written
    committed = committed_offsets(project)
    for partition, last in written.items():
        assert committed[partition] > last, (partition, committed, written)


def test_verify_exits_0_and_the_last_version_arrives_with_nothing_lost_or_doubled(
    project: Project,
) -> None:
    # The demo's own check: verify, once the table stopped changing.
    wait_until(lambda: project.state("verify")["Status"] == "exited", "verify finished", 900)
    assert project.state("verify")["ExitCode"] == 0, project.compose("logs", "verify")
    project.compose("start", "consumer")
    demo = project.compose("logs", "--no-log-prefix", "demo-data")
    last = int(demo.split("version ")[-1].split(":")[0])
    wait_until(lambda: f"last Delta version {last}\n" in status(project), f"version {last} in")
    again = subprocess.run(
        ["docker", "compose", "-p", project.name, *FILES, "run", "--rm", "--no-deps", "verify"],
        cwd=ROOT,
        env=project.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    # Doubled: a change published twice (ClickHouse would hide it behind FINAL).
    records = read_topic(project.endpoints, TOPIC)
    seen = Counter((r.key["id"], r.value["_commit_version"]) for r in records if r.value)
    assert seen and max(seen.values()) == 1


def status(project: Project) -> str:
    return project.compose("run", "--rm", "--no-deps", "consumer", "cdfbridge-consumer", "status")


def committed_offsets(project: Project) -> dict[int, int]:
    """partition → the group's committed offset, from `cdfbridge-consumer status`."""
    found = {}
    for line in status(project).splitlines():
        words = line.replace(",", "").replace(":", "").split()
        if words[:1] == ["partition"]:
            found[int(words[1])] = int(words[3])
    return found


def rows(project: Project) -> int:
    import clickhouse_connect

    client = clickhouse_connect.get_client(dsn=project.endpoints.clickhouse)
    try:
        found = client.query("SELECT count() FROM system.tables WHERE name = 'demo'").result_rows
        if not found or not found[0][0]:
            return 0
        return int(client.query("SELECT count() FROM demo").result_rows[0][0])
    finally:
        client.close()
