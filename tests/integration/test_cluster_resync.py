"""The Kafka engine on both shards of the local cluster, with `rebuild = "auto"`: after a
resync, the next `kafka-engine-ddl --apply` stops the engine on every server, rebuilds the
table on both shards, and every server's engine reads on with the new generation's group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main
from schemas.target import Target
from services.table_marks import built_from, held
from stack.cluster import CLUSTER
from tests.endpoints import Endpoints
from tests.integration.cluster_support import shard_clients
from tests.integration.consumer_support import consumer_env
from tests.integration.test_auto_resync import rename_and_resync
from tests.integration.test_column_mapping import create_mapped
from tests.producer_helpers import publish
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_every_shards_engine_is_rebuilt_and_reads_on_with_the_new_generations_group(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    clickhouse_cluster: tuple[str, ...],
    cluster_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mapped, urls, database = str(tmp_path / "mapped"), clickhouse_cluster, cluster_database
    create_mapped(spark, mapped)
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('1', 'ann', 30), ('2', 'bob', 40)")
    topic = publish(spark, endpoints, mapped, "id", until_version=1)
    consumer_env(monkeypatch, endpoints, database)
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__URL", urls[0])
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__CLUSTER", CLUSTER)
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__NODE_URLS", f'["{urls[0]}", "{urls[1]}"]')
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__REBUILD", "auto")
    apply = ["--topic", topic, "--group", f"{topic}-g", "--table", "t", "kafka-engine-ddl"]
    apply.append("--apply")
    assert main(apply) == 0
    _settled(endpoints, urls[0], database, mapped, topic)

    rename_and_resync(spark, endpoints, mapped, topic)

    assert main(apply) == 0  # rebuilds the table on both shards, then the engines read on

    target = Target(database, "t", CLUSTER)
    for number, shard in enumerate(shard_clients(urls), 1):
        built = built_from(shard, target)
        assert built is not None, f"shard {number} has no Kafka table"
        assert built.group == f"{topic}-g-clickhouse-g1", f"shard {number}: {built}"
        assert held(shard, target) == 1, f"shard {number}"
    _settled(endpoints, urls[0], database, mapped, topic)
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('4', 'dee', 20)")
    publish(spark, endpoints, mapped, "id", topic=topic, until_version=5)
    _settled(endpoints, urls[0], database, mapped, topic)  # the engines' new group reads on


def _settled(endpoints: Endpoints, url: str, database: str, path: str, topic: str) -> None:
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": url, "database": database, "cluster": CLUSTER},
        verify={"table": path, "topic": topic, "clickhouse_table": "t", "wait_seconds": 90},
    )
    report = verify(settings)
    assert report.equal, report.render()
