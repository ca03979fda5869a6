"""A topic's partitions go into ClickHouse in one insert (a write unit), recorded in each
partition's commit metadata first. A consumer killed around that insert leaves a unit that
whoever reads the partitions next writes again, whole, under the same token: with every
partition, or with some of them while another member of the group holds the rest."""

import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from consumer.group.kafka import consumer_config
from consumer.group.loop import Pipeline
from consumer.group.units import UNIT
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    Changes,
    order,
    orphan_dead_letter_topics_removed,  # noqa: F401 - autouse
    settings,
)
from tests.integration.test_consumer_recovery import (
    DIE_AFTER_INSERT,
    Background,
    assignments,
    env_for,
    rows,
    wait_for,
)

pytestmark = pytest.mark.integration

# Runs the real CLI, but SIGKILLs the process as its first insert starts: the unit is
# recorded in the partitions' commit metadata (step 1), and nothing is in ClickHouse.
DIE_BEFORE_INSERT = DIE_AFTER_INSERT.replace(
    "    original(self, batch)\n    os.kill(os.getpid(), signal.SIGKILL)",
    "    os.kill(os.getpid(), signal.SIGKILL)",
)
PARTITIONS = 4


def crashed(
    endpoints: Endpoints, topic_factory: Any, database: str, program: str
) -> tuple[str, Changes, str]:
    """A topic of 30 changes, consumed by `program` until it is killed; returns the topic,
    its changes' sender and its table."""
    topic = topic_factory(partitions=PARTITIONS)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(30)], "insert", 1)
    env = env_for(endpoints, topic, database, batch_rows="1000", batch_seconds="1")
    run = subprocess.run([sys.executable, "-c", program], env=env, timeout=120, capture_output=True)
    assert run.returncode == -9, run.stderr.decode()[-2000:]
    return topic, changes, f"`{database}`.`{topic}`"


def recorded_units(endpoints: Endpoints, topic: str) -> list[str]:
    """The commit metadata of the topic's partitions in its consumer group."""
    reader = Consumer(consumer_config({"bootstrap.servers": endpoints.kafka}, f"{topic}-group"))
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
    finally:
        reader.close()
    return [tp.metadata or "" for tp in found]


@pytest.mark.parametrize("program", [DIE_AFTER_INSERT, DIE_BEFORE_INSERT], ids=["after", "before"])
def test_kill_9_around_a_units_insert_then_a_restart_doubles_and_loses_nothing(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str, program: str
) -> None:
    topic, changes, table = crashed(endpoints, topic_factory, ch_database, program)
    units = recorded_units(endpoints, topic)
    # Merges would fold doubled rows away; the count below must see every row stored.
    clickhouse.command(f"SYSTEM STOP MERGES {table}")
    before = rows(clickhouse, table)
    changes.send([order(n, "later") for n in range(30, 50)], "insert", 2)
    Pipeline(settings(endpoints, topic, ch_database, batch_rows=1000), until_caught_up=True).run()

    assert before == (30 if program == DIE_AFTER_INSERT else 0)
    in_unit = [meta for meta in units if meta.startswith(UNIT)]
    assert len(in_unit) >= 2 and len(set(in_unit)) == 1, units  # one unit, several partitions
    assert rows(clickhouse, table) == 50


def test_a_unit_recorded_before_a_crash_is_written_whole_by_a_member_holding_part_of_it(
    endpoints: Endpoints, topic_factory: Any, kafka_admin: Any, clickhouse: Any, ch_database: str
) -> None:
    topic, changes, table = crashed(endpoints, topic_factory, ch_database, DIE_BEFORE_INSERT)
    clickhouse.command(f"SYSTEM STOP MERGES {table}")
    # Another member of the group holds some of the partitions and commits nothing.
    other = Consumer(consumer_config({"bootstrap.servers": endpoints.kafka}, f"{topic}-group"))
    other.subscribe([topic])
    wait_for(lambda: bool(other.poll(0.2) or other.assignment()), "the other member to join")

    restarted = Background(Pipeline(settings(endpoints, topic, ch_database, batch_rows=1000)))
    wait_for(
        lambda: (other.poll(0.1), assignments(kafka_admin, f"{topic}-group"))[1] == [2, 2],
        "the partitions to be shared",
    )
    # The restarted member's half of the unit is committed with the other half's rows read
    # again from Kafka: every row of the unit is in ClickHouse, though the other member
    # has read nothing.
    wait_for(lambda: rows(clickhouse, table) == 30, "the unit to be written whole")
    other.close()  # its partitions come to the restarted member, at their recorded unit
    changes.send([order(n, "later") for n in range(30, 50)], "insert", 2)
    wait_for(lambda: rows(clickhouse, table) >= 50, "the later rows")
    restarted.stop()

    assert rows(clickhouse, table) == 50
    assert clickhouse.query(f"SELECT count() FROM {table} FINAL").result_rows == [(50,)]
