"""docker-compose.yml run for real, on a local Docker engine, as the README says.

stack/docker/images.sh builds the images (starting dockerd, and installing it with apt-get,
when none answers); stack/docker/compose.local.yml swaps only the third-party images. The
tests then run in order on one compose project: every healthcheck turns healthy, SIGKILLed
producer and consumer containers come back by their restart policy, `docker compose stop`
(SIGTERM) stops the producer cleanly and drains the consumer, and verify exits 0 at the
table's last version with nothing lost or doubled.
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from collections.abc import Iterator
from functools import partial

import pytest

from tests.containers.compose_support import LOCAL, LONG_RUNNING, Project, running, wait_until
from tests.producer_helpers import read_topic

pytestmark = pytest.mark.containers

TOPIC = "cdfbridge.demo"
COMMITS = 40  # one a second: long enough to kill both stages while it changes


@pytest.fixture(scope="module")
def project(images: None) -> Iterator[Project]:
    with running(LOCAL, COMMITS) as found:
        yield found


def test_every_service_turns_healthy(project: Project) -> None:
    for service in LONG_RUNNING:
        wait_until(partial(project.healthy, service), f"{service} healthy")


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
        wait_until(partial(project.healthy, service), f"{service} healthy again")


def restarted(project: Project, service: str, before: object) -> bool:
    return bool(project.container(service)["RestartCount"] != before)


def test_compose_stop_drains_the_consumer_and_commits_what_it_wrote(project: Project) -> None:
    # SIGTERM, as `docker stop` sends it: the producer aborts its open transaction, exit 0.
    project.compose("stop", "producer")
    assert project.state("producer")["ExitCode"] == 0, project.compose("logs", "producer")
    project.compose("up", "-d", "--no-deps", "producer")  # `start` would rerun demo-data too
    project.compose("stop", "consumer")
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
    project.compose("up", "-d", "--no-deps", "consumer")


def test_verify_exits_0_at_the_last_version_with_nothing_lost_or_doubled(
    project: Project,
) -> None:
    # The demo's own check, once the table stopped changing: `--latest --wait`, so the
    # table's last version, whatever the kills and stops above cost.
    wait_until(partial(project.exited, "verify"), "verify finished", 900)
    log = project.compose("logs", "--no-color", "--no-log-prefix", "verify")
    assert project.state("verify")["ExitCode"] == 0, log
    demo = project.compose("logs", "--no-log-prefix", "demo-data")
    last = int(demo.split("version ")[-1].split(":")[0])
    assert f"at version {last}:" in log, log
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
