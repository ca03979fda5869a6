"""A target on a ClickHouse cluster of two shards (the local stack's `up cluster`): a
local table on each shard behind a Distributed table. The pipeline, the Kafka engine and
verify end equal to the Delta table, every key lives on one shard, and a shard stopped
mid-run loses and doubles nothing."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from consumer.group.loop import Pipeline
from consumer.group.metrics import RETRIES
from schemas.errors import CdfBridgeError
from stack import services
from stack.cluster import CLUSTER
from stack.settings import StackSettings
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.cluster_support import keys_by_shard, on_cluster, shard_clients
from tests.integration.consumer_support import consumer_env, wait_until_resolved_as
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_rewritten_keys import KEY, current_keys, write_rewrites
from tests.producer_helpers import publish
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _verify(
    endpoints: Endpoints, url: str, database: str, path: str, topic: str, table: str
) -> Any:
    return verify(
        VerifySettings(
            kafka={"bootstrap_servers": endpoints.kafka},
            clickhouse={"url": url, "database": database, "cluster": CLUSTER},
            verify={"table": path, "topic": topic, "clickhouse_table": table},
        )
    )


def test_rewritten_keys_and_deletes_land_on_their_keys_shard_for_both_consumers(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    clickhouse_cluster: tuple[str, ...],
    cluster_database: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "accounts")
    topic = publish(spark, endpoints, path, KEY, until_version=write_rewrites(path))
    database, urls = cluster_database, clickhouse_cluster
    into = consumer_settings(endpoints, topic, database, group=unique("group"), table="by_python")
    Pipeline(on_cluster(into, urls, database), until_caught_up=True).run()
    consumer_env(monkeypatch, endpoints, database)
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__URL", urls[0])
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__CLUSTER", "cdfbridge")
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__NODE_URLS", f'["{urls[0]}", "{urls[1]}"]')
    ddl = ["--topic", topic, "--group", unique("engine"), "--table", "by_kafka"]
    assert main([*ddl, "kafka-engine-ddl", "--apply"]) == 0
    printed = capsys.readouterr().out  # the DDL as it was run: server by server, no Keeper
    assert "run each statement on every server" in printed
    assert "ON CLUSTER" not in printed and "Replicated" not in printed
    first = shard_clients(urls)[0]
    wait_until_resolved_as(first, database, "by_kafka", "by_python", "region, id, name")

    report = _verify(endpoints, urls[0], database, path, topic, "by_python")
    assert report.equal, report.render()
    delta = DeltaTable(path).to_pyarrow_table().select(["region", "id"]).to_pylist()
    expected = {(row["region"], row["id"]) for row in delta}
    for table in ("by_python", "by_kafka"):
        _on_their_shards(urls, database, table, expected)

    python = ["--topic", topic, "--group", into.consumer.group, "--table", "by_python"]
    assert main([*python, "status"]) == 0
    for source in ("--from-topic", "--from-lake"):
        assert main([*python, "rebuild", source]) == 0
        report = _verify(endpoints, urls[0], database, path, topic, "by_python")
        assert report.equal, f"after rebuild {source}: {report.render()}"
        _on_their_shards(urls, database, "by_python", expected)


def _on_their_shards(urls: tuple[str, ...], database: str, table: str, expected: set[Any]) -> None:
    """The table holds `expected`, and no key has rows on both shards."""
    assert current_keys(shard_clients(urls)[0], database, table) == expected
    held = keys_by_shard(urls, database, table, "region, id")
    assert all(held), f"{table}: a shard holds nothing: {[len(h) for h in held]}"
    assert not held[0] & held[1], f"{table}: keys on both shards: {held[0] & held[1]}"


def test_a_shard_stopped_mid_run_is_waited_for_and_nothing_is_lost_or_doubled(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    clickhouse_cluster: tuple[str, ...],
    cluster_database: str,
) -> None:
    from stack.generate import Generator

    path, database, urls = str(tmp_path / "flowing"), cluster_database, clickhouse_cluster
    generator = Generator(path, seed=11)
    for operation in ("insert", "insert", "update", "delete"):
        last = generator.commit(operation, rows=200)
    topic = publish(spark, endpoints, path, "id", until_version=last)
    into = consumer_settings(endpoints, topic, database, group=unique("group"), table="flowing")
    pipeline = Pipeline(on_cluster(into, urls, database))
    runner = threading.Thread(target=pipeline.run)
    runner.start()
    stack = StackSettings()
    try:
        _wait(lambda: _rows(urls, database) > 0, "the first rows")
        services.down(stack, ["shard-2"])
        for operation in ("insert", "update", "delete", "update"):
            last = generator.commit(operation, rows=200)
        publish(spark, endpoints, path, "id", topic=topic, until_version=last)
        # An insert fails while the shard is away: the batch is retried, the consumer lives.
        _wait(lambda: pipeline.metrics.total(RETRIES) > 0, "retry of a batch")
        assert runner.is_alive()
        services.up(stack, ["shard-2"])
        _wait(lambda: _equal(endpoints, urls[0], database, path, topic), "equality")
    finally:
        services.up(stack, ["shard-2"])
        pipeline.stop()
        runner.join(60)
    doubled = sum(
        int(
            shard.command(
                f"SELECT count() FROM (SELECT id, _version FROM `{database}`.`flowing_local` "
                "GROUP BY id, _version HAVING count() > 1)"
            )
        )
        for shard in shard_clients(urls)
    )
    assert doubled == 0
    held = keys_by_shard(urls, database, "flowing", "id")
    assert not held[0] & held[1]


def _rows(urls: tuple[str, ...], database: str) -> int:
    first = shard_clients(urls)[0]
    if not int(first.command(f"EXISTS TABLE `{database}`.`flowing`")):
        return 0
    return int(first.command(f"SELECT count() FROM `{database}`.`flowing`"))


def _equal(endpoints: Endpoints, url: str, database: str, path: str, topic: str) -> bool:
    try:
        return bool(_verify(endpoints, url, database, path, topic, "flowing").equal)
    except CdfBridgeError:  # a shard still starting
        return False


def _wait(condition: Any, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {timeout_s} s"
        time.sleep(0.5)
