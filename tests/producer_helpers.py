"""Running the producer in-process and reading its topic back with independent readers."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from producer.run import run
from producer.settings import ProducerSettings
from tests.conftest import unique
from tests.endpoints import Endpoints


def settings(endpoints: Endpoints, table: str, primary_key: str, **source: Any) -> ProducerSettings:
    return ProducerSettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        schema_registry={"url": endpoints.registry},
        source={"table": table, "primary_key": primary_key, "metrics_port": None, **source},
    )


def publish(spark: Any, endpoints: Endpoints, table: str, primary_key: str, **source: Any) -> str:
    """Run the producer until --until-version; returns the topic."""
    source.setdefault("topic", unique("cdc"))
    run(settings(endpoints, table, primary_key, **source), spark=spark)
    return str(source["topic"])


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: dict[str, Any]
    value: dict[str, Any] | None
    raw_value: bytes | None  # as on the wire: Confluent-framed Avro


def read_topic(endpoints: Endpoints, topic: str, timeout_s: float = 120.0) -> list[Record]:
    """Every committed message, decoded by confluent-kafka's AvroDeserializer, in offset order
    per partition; fails when the partitions are not all read to their end in timeout_s."""
    registry = endpoints.registry_client()
    decode = AvroDeserializer(registry)
    consumer = Consumer(
        {
            "bootstrap.servers": endpoints.kafka,
            "group.id": unique("reader"),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,  # transactional topics end in markers no poll returns
        }
    )
    records: list[Record] = []
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < len(partitions):
            assert time.monotonic() < deadline, (
                f"{topic}: partitions {sorted(set(partitions) - at_end)} not read to their end "
                f"within {timeout_s} s ({len(records)} messages read)"
            )
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                at_end.add(msg.partition() or 0)
                continue
            key = decode(msg.key(), SerializationContext(topic, MessageField.KEY))
            raw = msg.value()
            value = decode(raw, SerializationContext(topic, MessageField.VALUE)) if raw else None
            records.append(Record(msg.partition() or 0, msg.offset() or 0, key, value, raw))
    finally:
        consumer.close()
    return records


def changes(records: list[Record], *columns: str) -> list[tuple[Any, ...]]:
    """(columns..., _change_type, _commit_version) of every non-tombstone record, sorted."""
    rows = [
        (*(r.value.get(c) for c in columns), r.value["_change_type"], r.value["_commit_version"])
        for r in records
        if r.value is not None
    ]
    return sorted(rows, key=lambda row: (row[-1], str(row)))


PEOPLE = "id STRING, name STRING, age LONG"


def create_table(spark: Any, path: str, columns: str = PEOPLE, cdf: bool = True) -> None:
    """An empty Delta table at path, with the Change Data Feed on unless cdf is False."""
    spark.sql(
        f"CREATE TABLE delta.`{path}` ({columns}) USING delta "
        f"TBLPROPERTIES (delta.enableChangeDataFeed = {str(cdf).lower()})"
    )


def append(spark: Any, path: str, rows: list[tuple[Any, ...]], columns: str = PEOPLE) -> None:
    spark.createDataFrame(rows, columns).write.format("delta").mode("append").save(path)


def change_every_way(spark: Any, path: str) -> None:
    """Versions 1-4 of a new table: insert 3 rows, update id 1, delete id 2, merge 3 and 4."""
    from delta.tables import DeltaTable

    create_table(spark, path)
    append(spark, path, [("1", "ann", 30), ("2", "bob", 40), ("3", "cy", 50)])
    table = DeltaTable.forPath(spark, path)
    table.update("id = '1'", {"age": "31"})
    table.delete("id = '2'")
    source = spark.createDataFrame([("3", "cy", 51), ("4", "dee", 20)], PEOPLE)
    merge = table.alias("t").merge(source.alias("s"), "t.id = s.id")
    merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()


def without_delta_jars(module: str, args: list[str], jars_dir: str, **env: str) -> Any:
    """`python -m module args` in a new process, so that its Spark driver is not the tests'
    session: with [spark] jars_dir at a directory without Delta's jars, and env set as
    CDFBRIDGE_* variables. Returns the finished process (exit code, stderr)."""
    import os
    import subprocess
    import sys

    settings = {f"CDFBRIDGE_{name.upper()}": value for name, value in env.items()}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env={**os.environ, "CDFBRIDGE_SPARK__JARS_DIR": jars_dir, **settings},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
