"""Several topics in one consumer process: one group, one table per topic, and a topic that
fails stops alone while the others are written."""

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from consumer.group.kafka import ensure_topic
from services import offsets
from tests.conftest import free_port, unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    Changes,
    consumer_env,
    order,
    orphan_dead_letter_topics_removed,  # noqa: F401 - autouse
)
from tests.integration.test_consumer_recovery import rows, scrape, wait_for

pytestmark = pytest.mark.integration


def lake_config(folder: Path, entries: list[dict[str, str]], consumer: str = "") -> Path:
    """A config file with a [[tables]] entry per dict (table and primary_key made up: only
    the producer reads them)."""
    blocks = [f"[consumer]\n{consumer}"] if consumer else []
    for n, entry in enumerate(entries):
        keys = {"table": f"/lake/t{n}", "primary_key": "id", **entry}
        blocks.append("[[tables]]\n" + "".join(f'{k} = "{v}"\n' for k, v in keys.items()))
    path = folder / "lake.toml"
    path.write_text("\n".join(blocks))
    return path


def current(clickhouse: Any, database: str, table: str) -> list[tuple[Any, ...]]:
    query = f"SELECT id, name, amount FROM `{database}`.`{table}_current` ORDER BY id"  # noqa: S608
    return list(clickhouse.query(query).result_rows)


def expected(
    ids: range, deleted: tuple[int, ...] = (), renamed: dict[int, str] | None = None
) -> list[tuple[Any, ...]]:
    """The rows of `current` after inserting `order(n)` for ids, then deleting or renaming."""
    names = renamed or {}
    return [(n, names.get(n, f"o{n}"), Decimal(n) / 4) for n in ids if n not in deleted]


def test_one_process_reads_three_topics_into_three_tables_each_equal_to_its_topic(
    endpoints: Endpoints,
    topic_factory: Callable[..., str],
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b, c = topic_factory(partitions=3), topic_factory(partitions=1), topic_factory(partitions=2)
    Changes(endpoints, a).send([order(n) for n in range(30)], "insert", 1)
    changes_b = Changes(endpoints, b)
    changes_b.send([order(n) for n in range(10)], "snapshot", 0)
    changes_b.send([order(n) for n in range(3)], "delete", 1)
    changes_c = Changes(endpoints, c)
    changes_c.send([order(n) for n in range(20)], "insert", 1)
    changes_c.send([order(n, "again") for n in range(5)], "update_postimage", 2)
    config = lake_config(
        tmp_path,
        [
            {"topic": a, "target": "orders_a", "partition_by": "id % 4"},
            {"topic": b},
            {"topic": c, "target": "orders_c"},
        ],
        consumer="batch_seconds = 0.3\nmetrics_port = 0\n",
    )
    consumer_env(monkeypatch, endpoints, ch_database)
    group = unique("group")

    code = main(["--config", str(config), "--group", group, "run", "--until-caught-up"])

    assert code == 0
    assert current(clickhouse, ch_database, "orders_a") == expected(range(30))
    assert current(clickhouse, ch_database, b) == expected(range(10), deleted=(0, 1, 2))
    assert current(clickhouse, ch_database, "orders_c") == expected(
        range(20), renamed=dict.fromkeys(range(5), "again")
    )
    partitioned = clickhouse.command(
        "SELECT partition_key FROM system.tables WHERE database = {d:String} AND name = 'orders_a'",
        parameters={"d": ch_database},
    )
    assert partitioned == "id % 4"
    for topic in (a, b, c):
        found = offsets.positions({"bootstrap.servers": endpoints.kafka}, group, topic)
        assert sum(p.lag for p in found) == 0, topic


def test_a_topic_whose_table_does_not_match_stops_alone_and_stays_uncommitted(
    endpoints: Endpoints,
    topic_factory: Callable[..., str],
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
) -> None:
    a, broken, c = (topic_factory(partitions=2) for _ in range(3))
    changes_a = Changes(endpoints, a)
    changes_a.send([order(n) for n in range(10)], "insert", 1)
    Changes(endpoints, broken).send([order(n) for n in range(10)], "insert", 1)
    Changes(endpoints, c).send([order(n) for n in range(10)], "insert", 1)
    # A table of that name, but no cdfbridge table: the topic cannot be written.
    clickhouse.command(f"CREATE TABLE `{ch_database}`.`{broken}` (id Int64) ENGINE = Memory")
    config = lake_config(tmp_path, [{"topic": t} for t in (a, broken, c)])
    group, port = unique("group"), free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "consumer", "--config", str(config), "--group", group, "run"],
        env=env(endpoints, ch_database, BATCH_SECONDS="0.3", METRICS_PORT=str(port)),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        failed = f'cdfbridge_consumer_topic_failed{{topic="{broken}"}} 1.0'
        wait_for(lambda: failed in scrape(port, "/metrics"), "the broken topic to fail")

        def holds(topic: str, count: int) -> Callable[[], bool]:
            return lambda: rows(clickhouse, f"`{ch_database}`.`{topic}`") == count

        wait_for(holds(a, 10), a)
        wait_for(holds(c, 10), c)
        changes_a.send([order(n, "later") for n in range(10, 15)], "insert", 2)
        wait_for(holds(a, 15), "the changes sent after the failure")
        health = scrape_status(port)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()

    assert process.returncode == 1, stderr[-2000:]
    assert f"topic {broken} stopped: table `{ch_database}`.`{broken}` has no MATERIALIZED" in stderr
    assert health[0] == 503 and f"topic {broken} stopped: SchemaMismatchError" in health[1]
    kafka = {"bootstrap.servers": endpoints.kafka}
    assert [p.committed for p in offsets.positions(kafka, group, broken)] == [-1001, -1001]
    for topic in (a, c):
        assert sum(p.lag for p in offsets.positions(kafka, group, topic)) == 0


def env(endpoints: Endpoints, database: str, **consumer: str) -> dict[str, str]:
    """The environment of a consumer process: the test services, no topic (the config lists
    them), and CDFBRIDGE_CONSUMER__<KEY> for each of `consumer`."""
    values = {
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
        "CDFBRIDGE_CLICKHOUSE__URL": endpoints.clickhouse,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__REGISTRY_URL_FOR_CLICKHOUSE": endpoints.registry_for_clickhouse,
    }
    values |= {f"CDFBRIDGE_CONSUMER__{key}": value for key, value in consumer.items()}
    return {k: v for k, v in os.environ.items() if not k.startswith("CDFBRIDGE_")} | values


def scrape_status(port: int) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:  # noqa: S310
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_status_shows_a_block_per_topic_a_pattern_matches_leaving_side_topics_out(
    endpoints: Endpoints,
    topic_factory: Callable[..., str],
    ch_database: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = topic_factory(partitions=2), topic_factory(partitions=1)
    Changes(endpoints, a).send([order(n) for n in range(4)], "insert", 1)
    Changes(endpoints, b).send([order(n) for n in range(3)], "insert", 1)
    ensure_topic({"bootstrap.servers": endpoints.kafka}, f"{a}.dlq")  # a side topic
    consumer_env(monkeypatch, endpoints, ch_database)
    pattern = f"({re.escape(a)}|{re.escape(b)}).*"
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__TOPIC_PATTERN", pattern)

    code = main(["--group", "status-group", "status"])

    assert code == 0
    blocks = capsys.readouterr().out.strip().split("\n\n")
    assert [block.splitlines()[0] for block in sorted(blocks)] == sorted(
        [
            f"group status-group on topic {a}: total lag 4",
            f"group status-group on topic {b}: total lag 3",
        ]
    )
    assert all("does not exist" in block for block in blocks)


def test_kafka_engine_ddl_is_generated_and_applied_for_every_topic(
    endpoints: Endpoints,
    topic_factory: Callable[..., str],
    clickhouse: Any,
    ch_database: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = topic_factory(partitions=1), topic_factory(partitions=1)
    Changes(endpoints, a).send([order(1)], "insert", 1)
    Changes(endpoints, b).send([order(1)], "insert", 1)
    config = lake_config(
        tmp_path, [{"topic": a, "target": "by_engine_a", "partition_by": "id % 2"}, {"topic": b}]
    )
    consumer_env(monkeypatch, endpoints, ch_database)

    code = main(["--config", str(config), "kafka-engine-ddl", "--apply"])

    assert code == 0
    out = capsys.readouterr().out
    assert f"kafka_topic_list = '{a}'" in out and f"kafka_topic_list = '{b}'" in out
    tables = dict(
        clickhouse.query(
            "SELECT name, partition_key FROM system.tables WHERE database = {d:String}",
            parameters={"d": ch_database},
        ).result_rows
    )
    assert {"by_engine_a", "by_engine_a_kafka", "by_engine_a_kafka_mv", b, f"{b}_kafka"} <= set(
        tables
    )
    assert tables["by_engine_a"] == "id % 2"
