"""Resync without an operator: a column renamed under column mapping makes the producer
(on_incompatible_change = "resync") start a new generation by itself, and the consumer
(rebuild = "auto") rebuild that table from the lake, while another table of the same
producer and consumer keeps flowing. Nobody runs a command. A table the Kafka engine fills
is rebuilt by the next `kafka-engine-ddl --apply`, and the engine reads on."""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from consumer.cli import main as consumer_main
from consumer.process import Consumers
from consumer.topics import resolve
from schemas.errors import CdfBridgeError
from schemas.target import Target
from services.progress_topic import Progress
from services.settings import KafkaConfig
from services.table_marks import built_from, held
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_column_mapping import create_mapped
from tests.integration.test_many_tables import _run_into, _wait_for
from tests.producer_helpers import publish
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]
log = logging.getLogger(__name__)


def _equal(endpoints: Endpoints, database: str, path: str, topic: str) -> bool:
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"table": path, "topic": topic, "latest": True},
    )
    try:
        return verify(settings).equal
    except CdfBridgeError:  # nothing published or consumed yet
        return False


def _arrived(clickhouse: Any, target: str, version: int) -> bool:
    return int(clickhouse.command(f"SELECT max(_commit_version) FROM {target}")) >= version


def test_a_renamed_column_is_resynced_and_rebuilt_with_no_command_while_another_table_flows(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str, clickhouse: Any
) -> None:
    mapped, flowing = str(tmp_path / "mapped"), str(tmp_path / "flowing")
    create_mapped(spark, mapped)
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('1', 'ann', 30), ('2', 'bob', 40)")
    generator = Generator(flowing, seed=5)
    generator.commit("insert", rows=20)
    topics = {"mapped": unique("auto_m"), "flowing": unique("auto_f")}
    entries = [
        {"table": mapped, "primary_key": "id", "topic": topics["mapped"]},
        {"table": flowing, "primary_key": "id", "topic": topics["flowing"]},
    ]
    entries[0]["on_incompatible_change"] = "resync"
    stop, raised = threading.Event(), list[BaseException]()
    producer = threading.Thread(target=_run_into, args=(endpoints, entries, spark, stop, raised))
    settings = consumer_settings(endpoints, topics["mapped"], ch_database, rebuild="auto")
    section = settings.consumer.model_copy(update={"topic": "", "topics": list(topics.values())})
    consumers = Consumers(resolve(settings.model_copy(update={"consumer": section})))
    consumer = threading.Thread(target=consumers.run)
    producer.start()
    consumer.start()
    try:
        for name, path in (("mapped", mapped), ("flowing", flowing)):
            equal = partial(_equal, endpoints, ch_database, path, topics[name])
            _wait_for(equal, f"{name} equal", 180)

        spark.sql(f"ALTER TABLE delta.`{mapped}` RENAME COLUMN name TO full_name")
        spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('3', 'cy', 50)")
        kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
        target = f"`{ch_database}`.`{topics['flowing']}`"
        lags, began = [], time.monotonic()
        while not _equal(endpoints, ch_database, mapped, topics["mapped"]):
            assert time.monotonic() - began < 240, "the renamed table never became equal"
            committed = generator.commit("update", rows=5)  # the other table flows meanwhile
            at = time.monotonic()
            arrived = partial(_arrived, clickhouse, target, committed)
            _wait_for(arrived, "the flowing table's commit", 120)
            lags.append(round(time.monotonic() - at, 2))
        log.warning("flowing table: seconds from commit to ClickHouse meanwhile: %s", lags)
        print(f"flowing table, seconds from commit to ClickHouse during the rebuild: {lags}")

        assert Progress(kafka, topics["mapped"]).read().generation.number == 1
        assert Progress(kafka, topics["flowing"]).read().generation.number == 0
        names = clickhouse.query(
            f"SELECT id, full_name FROM `{ch_database}`.`{topics['mapped']}_current` ORDER BY id"
        ).result_rows
        assert names == [("1", "ann"), ("2", "bob"), ("3", "cy")]
    finally:
        stop.set()
        consumers.stop()
        producer.join(60)
        consumer.join(60)
    assert raised == [] and consumers.failures == []


def test_the_kafka_engines_table_is_rebuilt_by_the_next_apply_after_a_resync(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: Any,
) -> None:
    mapped = str(tmp_path / "mapped")
    create_mapped(spark, mapped)
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('1', 'ann', 30), ('2', 'bob', 40)")
    topic = publish(spark, endpoints, mapped, "id", until_version=1)
    consumer_env(monkeypatch, endpoints, ch_database)
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__REBUILD", "auto")
    apply = ["--topic", topic, "--group", f"{topic}-g", "--table", "t", "kafka-engine-ddl"]
    apply.append("--apply")
    assert consumer_main(apply) == 0
    assert _settled(endpoints, ch_database, mapped, topic)

    rename_and_resync(spark, endpoints, mapped, topic)

    assert consumer_main(apply) == 0  # rebuilds the table, then the engine reads on

    target = Target(ch_database, "t")
    built = built_from(clickhouse, target)
    assert built is not None and built.group == f"{topic}-g-clickhouse-g1"
    assert held(clickhouse, target) == 1
    assert _settled(endpoints, ch_database, mapped, topic)
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('4', 'dee', 20)")
    publish(spark, endpoints, mapped, "id", topic=topic, until_version=5)
    assert _settled(endpoints, ch_database, mapped, topic)  # the engine's new group reads on


def rename_and_resync(spark: Any, endpoints: Endpoints, mapped: str, topic: str) -> None:
    """A column of the mapped table renamed (and a delete, an insert): the producer, told to
    resync by itself, publishes the table's state into the topic's generation 1."""
    spark.sql(f"ALTER TABLE delta.`{mapped}` RENAME COLUMN name TO full_name")
    spark.sql(f"DELETE FROM delta.`{mapped}` WHERE id = '2'")
    spark.sql(f"INSERT INTO delta.`{mapped}` VALUES ('3', 'cy', 50)")
    resync = {"on_incompatible_change": "resync"}
    publish(spark, endpoints, mapped, "id", topic=topic, until_version=4, **resync)
    kafka: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    assert Progress(kafka, topic).read().generation.number == 1


def _settled(endpoints: Endpoints, database: str, path: str, topic: str) -> bool:
    settings = VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"table": path, "topic": topic, "clickhouse_table": "t", "wait_seconds": 90},
    )
    report = verify(settings)
    assert report.equal, report.render()
    return True
