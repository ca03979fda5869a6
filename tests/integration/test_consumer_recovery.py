"""The consumer survives crashes, restarts of ClickHouse and rebalances without losing or
doubling rows."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import clickhouse_connect
import pytest
from confluent_kafka.admin import ConfigResource

from consumer.group.loop import Pipeline
from consumer.group.metrics import RETRIES, ROWS
from consumer.group.startup import leave, member_consumer
from consumer.rebuild.first_read import Starts, starts
from producer.publish.topics import ensure_topics
from schemas.naming import REPLAYABLE, progress_topic
from services import offsets
from services.settings import ClickHouseSettings
from stack.clickhouse import ClickHouse
from stack.settings import StackSettings
from tests.conftest import free_port, unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    Changes,
    order,
    orphan_dead_letter_topics_removed,  # noqa: F401 - autouse
    settings,
)

pytestmark = pytest.mark.integration

# Runs the real CLI, but SIGKILLs the process right after the first ClickHouse insert,
# before the offsets are committed.
DIE_AFTER_INSERT = """
import os, signal, sys
from consumer.group import writer
original = writer.BatchWriter.write
def write_then_die(self, batch):
    original(self, batch)
    os.kill(os.getpid(), signal.SIGKILL)
writer.BatchWriter.write = write_then_die
from consumer.cli import main
sys.exit(main())
"""


def env_for(endpoints: Endpoints, topic: str, database: str, **consumer: str) -> dict[str, str]:
    values = {
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_KAFKA__PROPERTIES": json.dumps({"session.timeout.ms": "6000"}),
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
        "CDFBRIDGE_CLICKHOUSE__URL": endpoints.clickhouse,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__TOPIC": topic,
        "CDFBRIDGE_CONSUMER__GROUP": f"{topic}-group",
        "CDFBRIDGE_CONSUMER__REGISTRY_URL_FOR_CLICKHOUSE": endpoints.registry_for_clickhouse,
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
    }
    values |= {f"CDFBRIDGE_CONSUMER__{k.upper()}": v for k, v in consumer.items()}
    return {k: v for k, v in os.environ.items() if not k.startswith("CDFBRIDGE_")} | values


def test_kill_9_between_insert_and_commit_does_not_double_rows(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(30)], "insert", 1)
    env = env_for(endpoints, topic, ch_database, batch_rows="1000", batch_seconds="1")

    crashed = subprocess.run(
        [sys.executable, "-c", DIE_AFTER_INSERT], env=env, timeout=120, capture_output=True
    )
    # Merges would fold doubled rows away; the count below must see every row stored.
    clickhouse.command(f"SYSTEM STOP MERGES `{ch_database}`.`{topic}`")
    inserted_before_crash = clickhouse.command(f"SELECT count() FROM `{ch_database}`.`{topic}`")
    # More changes arrive meanwhile, so a restart that ignored the crashed batch's end would
    # cut a larger batch with another dedup token.
    changes.send([order(n, "later") for n in range(30, 50)], "insert", 2)
    restart = settings(endpoints, topic, ch_database, batch_rows=1000)
    Pipeline(restart, until_caught_up=True).run()

    assert crashed.returncode == -9, crashed.stderr.decode()[-2000:]
    assert inserted_before_crash == 30
    count = clickhouse.command(f"SELECT count() FROM `{ch_database}`.`{topic}`")
    assert count == 50


class Background:
    """A Pipeline running on a thread until stopped; keeps what it raised."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.pipeline.run()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.errors.append(exc)

    def stop(self) -> None:
        self.pipeline.stop()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive()
        assert self.errors == []


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def rows(client: Any, table: str) -> int:
    """Rows stored in `table`, 0 while the consumer has not created it yet."""
    if not client.command(f"EXISTS TABLE {table}"):
        return 0
    return int(client.command(f"SELECT count() FROM {table}"))


def assignments(kafka_admin: Any, group: str) -> list[int]:
    """How many partitions each member of the group holds, fewest first."""
    found = kafka_admin.describe_consumer_groups([group])[group].result()
    return sorted(len(m.assignment.topic_partitions) for m in found.members)


def test_rebalance_between_two_consumers_of_one_group_loses_and_doubles_nothing(
    endpoints: Endpoints, topic_factory: Any, kafka_admin: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=4)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(40)], "insert", 1)
    table = f"`{ch_database}`.`{topic}`"

    def count() -> int:
        return rows(clickhouse, table)

    first = Background(Pipeline(settings(endpoints, topic, ch_database)))
    wait_for(lambda: count() == 40, "the first consumer to insert the snapshot")
    # Merges would fold versions of a key together; the count below must see every row.
    clickhouse.command(f"SYSTEM STOP MERGES {table}")
    second = Background(Pipeline(settings(endpoints, topic, ch_database)))
    wait_for(
        lambda: assignments(kafka_admin, f"{topic}-group") == [2, 2],
        "the group to rebalance to two partitions each",
    )
    changes.send([order(n, "later") for n in range(40)], "update_postimage", 2)
    wait_for(lambda: count() >= 80, "both consumers to insert the updates")
    first.stop()
    second.stop()

    assert count() == 80
    names = clickhouse.query(f"SELECT DISTINCT name FROM {table} FINAL").result_rows
    assert names == [("later",)]


@pytest.fixture
def own_clickhouse(tmp_path: Path) -> Iterator[ClickHouse]:
    """A private ClickHouse the test may stop and start; it reaches the shared registry."""
    service = ClickHouse(
        StackSettings(
            home=tmp_path / "stack",
            clickhouse_http_port=free_port(),
            clickhouse_tcp_port=free_port(),
        )
    )
    service.start()
    yield service
    service.stop()


def test_clickhouse_restarted_mid_run_is_waited_for_and_nothing_is_lost(
    endpoints: Endpoints, topic_factory: Any, own_clickhouse: ClickHouse
) -> None:
    topic = topic_factory(partitions=2)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(20)], "insert", 1)
    base = settings(endpoints, topic, "default")
    pointed = base.model_copy(
        update={"clickhouse": ClickHouseSettings(url=own_clickhouse.endpoint, database="default")}
    )
    client = clickhouse_connect.get_client(dsn=own_clickhouse.endpoint)
    running = Background(Pipeline(pointed))
    table = f"`default`.`{topic}`"
    wait_for(lambda: rows(client, table) == 20, "the first rows")

    own_clickhouse.stop()
    changes.send([order(n, "later") for n in range(20)], "update_postimage", 2)
    wait_for(lambda: running.pipeline.metrics.total(RETRIES) >= 2, "failed retries")
    own_clickhouse.start()
    client = clickhouse_connect.get_client(dsn=own_clickhouse.endpoint)
    wait_for(lambda: running.pipeline.metrics.total(ROWS) >= 40, "the updates")
    running.stop()

    current = client.query(
        f"SELECT count(), groupUniqArray(name) FROM `default`.`{topic}_current`"
    ).result_rows
    assert current == [(20, ["later"])]
    assert running.pipeline.metrics.total(ROWS) == 40


def test_a_stop_while_clickhouse_is_down_keeps_its_deadline_and_leaves_the_rest_for_later(
    endpoints: Endpoints,
    topic_factory: Any,
    own_clickhouse: ClickHouse,
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = topic_factory(partitions=1)
    Changes(endpoints, topic).send([order(n) for n in range(10)], "insert", 1)
    pointed = settings(endpoints, topic, "default", batch_seconds=600).model_copy(
        update={"clickhouse": ClickHouseSettings(url=own_clickhouse.endpoint, database="default")}
    )
    running = Background(Pipeline(pointed))
    buffered = "cdfbridge_consumer_buffered_rows"
    registry = running.pipeline.metrics.registry
    wait_for(lambda: registry.get_sample_value(buffered) == 10, "the changes to be buffered")

    own_clickhouse.stop()
    stopping = time.monotonic()
    running.stop()  # the drain retries for 2 x max_backoff_seconds (2 s), then gives up
    stopped_after = time.monotonic() - stopping
    own_clickhouse.start()
    Pipeline(pointed, until_caught_up=True).run()

    assert stopped_after < 20
    assert any(r.getMessage().startswith("stopping with uncommitted") for r in caplog.records)
    client = clickhouse_connect.get_client(dsn=own_clickhouse.endpoint)
    assert client.command(f"SELECT count() FROM `default`.`{topic}`") == 10


def test_consumer_started_before_its_producer_waits_outside_the_group_then_consumes(
    endpoints: Endpoints,
    topic_factory: Any,
    kafka_admin: Any,
    clickhouse: Any,
    ch_database: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = topic_factory(partitions=2)
    running = Background(Pipeline(settings(endpoints, topic, ch_database)))

    def retries() -> int:  # the schemas are looked up again after each failed attempt
        return sum(
            r.getMessage() == "waiting for services" and "attempt" in r.__dict__
            for r in caplog.records
        )

    wait_for(lambda: retries() >= 2, "the consumer to wait for schemas")
    group = kafka_admin.describe_consumer_groups([f"{topic}-group"])[f"{topic}-group"].result()

    Changes(endpoints, topic).send([order(n) for n in range(10)], "insert", 1)
    table = f"`{ch_database}`.`{topic}`"
    wait_for(lambda: rows(clickhouse, table) == 10, "the changes published after the start")
    running.stop()

    assert group.members == []  # it did not hold the partitions while it could not write


def test_a_consumer_started_before_its_topic_exists_leaves_it_for_the_producer_to_create(
    endpoints: Endpoints, kafka_admin: Any, ch_database: str
) -> None:
    """`run` first asks where its group starts (consumer/rebuild/first_read.py). The broker
    creates a topic a client asks about by default (auto.create.topics.enable): made so, the
    data topic would get the broker's partition count and retention, not compaction, and
    the producer leaves an existing topic as it is."""
    topic = unique("topic")

    found = starts(settings(endpoints, topic, ch_database))

    assert found == Starts()
    ensure_topics({"bootstrap.servers": endpoints.kafka}, topic, 2)
    try:
        config = kafka_admin.describe_configs([ConfigResource("topic", topic)])
        made = next(iter(config.values())).result(timeout=30)
        assert made["cleanup.policy"].value == REPLAYABLE["cleanup.policy"]
        assert len(kafka_admin.list_topics(topic, timeout=10).topics[topic].partitions) == 2
    finally:
        kafka_admin.delete_topics([topic, progress_topic(topic)])


def test_a_member_leaving_during_its_join_is_not_left_in_the_group(
    endpoints: Endpoints, topic_factory: Any, kafka_admin: Any, ch_database: str
) -> None:
    """The member closes only once its join has finished, at whatever point of its join the
    close comes: closed while its JoinGroup was in flight, a member used to stay in the
    group until its session timed out (45 s), holding partitions nobody read."""
    topic = topic_factory(partitions=2)
    groups = []
    for step in range(40):  # left 0 to 195 ms after subscribing: across the join
        joined: list[bool] = []
        group = f"{topic}-group-{step}"
        member = member_consumer(settings(endpoints, topic, ch_database, group=group), 1024)
        member.subscribe([topic], on_assign=lambda *_, joined=joined: joined.append(True))
        time.sleep(step * 0.005)
        leave(member, partial(bool, joined), threading.Event())
        groups.append(group)
    time.sleep(1)  # a member added after its close shows up by now

    described = kafka_admin.describe_consumer_groups(groups)
    stayed = {group: len(found.result().members) for group, found in described.items()}
    assert {group: n for group, n in stayed.items() if n} == {}


def test_sigterm_drains_commits_and_exits_0_and_health_answers_meanwhile(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=2)
    Changes(endpoints, topic).send([order(n) for n in range(10)], "insert", 1)
    port = free_port()
    env = env_for(endpoints, topic, ch_database, batch_seconds="600", metrics_port=str(port))
    process = subprocess.Popen(
        [sys.executable, "-m", "consumer", "run"], env=env, stderr=subprocess.PIPE
    )
    try:
        wait_for(
            lambda: "cdfbridge_consumer_buffered_rows 10.0" in scrape(port, "/metrics"),
            "the consumer to buffer the 10 changes",
        )
        health = scrape(port, "/health")
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    finally:
        process.kill()

    assert health == "ok\n"
    assert code == 0, process.stderr.read().decode()[-2000:] if process.stderr else ""
    assert clickhouse.command(f"SELECT count() FROM `{ch_database}`.`{topic}`") == 10
    positions = offsets.positions({"bootstrap.servers": endpoints.kafka}, f"{topic}-group", topic)
    assert sum(p.lag for p in positions) == 0


def scrape(port: int, path: str) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:  # noqa: S310
            return str(answer.read().decode())
    except OSError:
        return ""  # not listening yet


def test_partitions_lost_while_frozen_drop_their_buffers_and_are_read_again(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=2)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(10)], "insert", 1)
    port = free_port()
    env = env_for(endpoints, topic, ch_database, batch_seconds="8", metrics_port=str(port))
    process = subprocess.Popen(
        [sys.executable, "-m", "consumer", "run"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(
            lambda: "cdfbridge_consumer_buffered_rows 10.0" in scrape(port, "/metrics"),
            "the consumer to buffer the first changes",
        )
        table = f"`{ch_database}`.`{topic}`"
        clickhouse.command(f"SYSTEM STOP MERGES {table}")  # so doubled rows would show
        process.send_signal(signal.SIGSTOP)  # frozen past session.timeout.ms (6 s)
        time.sleep(10)
        process.send_signal(signal.SIGCONT)
        changes.send([order(n) for n in range(10, 15)], "insert", 2)
        wait_for(lambda: rows(clickhouse, table) >= 15, "all changes after the freeze")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()

    assert "partitions lost, buffers dropped" in stderr
    assert process.returncode == 0
    assert clickhouse.command(f"SELECT count() FROM {table}") == 15
