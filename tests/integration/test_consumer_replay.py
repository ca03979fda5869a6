"""Replays: rebuilding through a shadow table, moving offsets, independent subscribers,
and the status command."""

import re
import time
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from consumer.cli import main
from consumer.group.loop import Pipeline
from services import offsets
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    Changes,
    joined_member,
    order,
    orphan_dead_letter_topics_removed,  # noqa: F401 - autouse
    settings,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def cli_env(endpoints: Endpoints, ch_database: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The consumer's env vars, pointing at the test services and database."""
    for name, value in {
        "KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "SCHEMA_REGISTRY__URL": endpoints.registry,
        "CLICKHOUSE__URL": endpoints.clickhouse,
        "CLICKHOUSE__DATABASE": ch_database,
        "CONSUMER__REGISTRY_URL_FOR_CLICKHOUSE": endpoints.registry_for_clickhouse,
        "CONSUMER__BATCH_SECONDS": "0.3",
        "CONSUMER__METRICS_PORT": "0",
    }.items():
        monkeypatch.setenv(f"CDFBRIDGE_{name}", value)


def consume(endpoints: Endpoints, topic: str, database: str, **consumer: Any) -> None:
    Pipeline(settings(endpoints, topic, database, **consumer), until_caught_up=True).run()


def table_uuid(clickhouse: Any, database: str, table: str) -> str:
    return str(
        clickhouse.command(
            "SELECT uuid FROM system.tables WHERE database = {d:String} AND name = {t:String}",
            parameters={"d": database, "t": table},
        )
    )


@pytest.mark.usefixtures("cli_env")
def test_rebuild_replays_into_a_shadow_table_then_exchanges_it(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=2)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(10)], "insert", 1)
    changes.send([order(4)], "delete", 2)
    consume(endpoints, topic, ch_database, table="orders")
    before = table_uuid(clickhouse, ch_database, "orders")
    db = f"`{ch_database}`"
    clickhouse.command(
        f"INSERT INTO {db}.orders (id, name, _change_type, _commit_version, _commit_timestamp) "
        "VALUES (999, 'stray', 'insert', 9, now())"
    )

    code = main(["--topic", topic, "--group", f"{topic}-group", "--table", "orders", "rebuild"])

    assert code == 0
    ids = clickhouse.query(f"SELECT id FROM {db}.orders_current ORDER BY id").result_rows
    assert ids == [(n,) for n in range(10) if n != 4]
    assert table_uuid(clickhouse, ch_database, "orders") != before
    leftovers = clickhouse.command(
        "SELECT count() FROM system.tables WHERE database = {d:String} AND name LIKE '%rebuild%'",
        parameters={"d": ch_database},
    )
    assert leftovers == 0


@pytest.mark.usefixtures("cli_env")
def test_reset_offsets_moves_a_stopped_group_to_earliest_time_or_offset(
    endpoints: Endpoints, topic_factory: Any, ch_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = topic_factory(partitions=2)
    Changes(endpoints, topic).send([order(n) for n in range(12)], "insert", 1)
    group = f"{topic}-group"
    consume(endpoints, topic, ch_database)
    base = ["--topic", topic, "--group", group]

    def committed() -> list[str]:
        capsys.readouterr()
        assert main([*base, "status"]) == 0
        return [line.split(",")[0] for line in capsys.readouterr().out.splitlines()[1:3]]

    assert main([*base, "reset-offsets", "--to-earliest"]) == 0
    assert committed() == ["  partition 0: committed 0", "  partition 1: committed 0"]
    assert main([*base, "reset-offsets", "--to-offset", "2", "--partition", "1"]) == 0
    assert committed() == ["  partition 0: committed 0", "  partition 1: committed 2"]
    assert main([*base, "reset-offsets", "--to-datetime", "2100-01-01T00:00:00+00:00"]) == 0
    assert main([*base, "status"]) == 0
    assert "total lag 0" in capsys.readouterr().out


@pytest.mark.usefixtures("cli_env")
def test_reset_offsets_refuses_a_running_group_and_moves_nothing(
    endpoints: Endpoints, topic_factory: Any, ch_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kafka refuses to move a group with a member partition by partition, in its answer and
    not as an error: the command must say so, not print the offsets it did not set."""
    topic = topic_factory(partitions=2)
    Changes(endpoints, topic).send([order(n) for n in range(12)], "insert", 1)
    group = f"{topic}-group"
    consume(endpoints, topic, ch_database)
    before = offsets.committed({"bootstrap.servers": endpoints.kafka}, group, topic)
    member = joined_member(endpoints.kafka, group, topic)
    try:
        capsys.readouterr()
        code = main(["--topic", topic, "--group", group, "reset-offsets", "--to-earliest"])
    finally:
        member.close()
    printed = capsys.readouterr()
    assert code == 2, printed
    assert "stop them first" in printed.err and "offset 0" not in printed.out
    assert offsets.committed({"bootstrap.servers": endpoints.kafka}, group, topic) == before


@pytest.mark.usefixtures("cli_env")
def test_status_shows_lag_last_delta_version_and_row_counts(
    endpoints: Endpoints, topic_factory: Any, ch_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(4)], "insert", 1)
    changes.send([order(0)], "delete", 3)
    consume(endpoints, topic, ch_database)
    changes.send([order(9)], "insert", 4)  # not consumed: lag 1

    assert main(["--topic", topic, "--group", f"{topic}-group", "status"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"group {topic}-group on topic {topic}: total lag 1"
    assert lines[1] == "  partition 0: committed 5, end 6, lag 1"
    # Stored rows depend on how inserts collapse same-key rows; current ones do not.
    assert re.search(r": [45] rows stored, 3 current, last Delta version 3$", lines[2])


def test_two_groups_fill_two_tables_independently(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=2)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(6)], "insert", 1)
    consume(endpoints, topic, ch_database, group="first", table="first")
    changes.send([order(n, "later") for n in range(3)], "update_postimage", 2)

    consume(endpoints, topic, ch_database, group="second", table="second")

    query = "SELECT id, name FROM `{db}`.`{t}_current` ORDER BY id"
    first = clickhouse.query(query.format(db=ch_database, t="first")).result_rows
    second = clickhouse.query(query.format(db=ch_database, t="second")).result_rows
    assert first == [(n, f"o{n}") for n in range(6)]
    assert second == [(n, "later" if n < 3 else f"o{n}") for n in range(6)]


def test_a_topic_created_again_under_its_name_is_not_taken_for_the_old_ones_repeats(
    endpoints: Endpoints, kafka_admin: Any, clickhouse: Any, ch_database: str
) -> None:
    """Its offsets start at 0 again, so its first batch has the old first batch's offsets;
    with the topic's id in the dedup token, ClickHouse inserts it."""
    topic = unique("topic")
    for ids in (range(10), range(100, 110)):
        kafka_admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
        Changes(endpoints, topic).send([order(n) for n in ids], "insert", 1)
        consume(endpoints, topic, ch_database, group=unique("group"), table="orders")
        kafka_admin.delete_topics([topic])[topic].result(timeout=30)
        wait_until_gone(kafka_admin, topic)

    assert clickhouse.command(f"SELECT count() FROM `{ch_database}`.orders") == 20


def wait_until_gone(admin: Any, topic: str) -> None:
    deadline = time.monotonic() + 30
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"topic {topic} still listed 30 s after deletion"
        time.sleep(0.2)
