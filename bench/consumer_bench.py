"""Benchmark: the Python consumer against ClickHouse's Kafka engine on one topic.

Fills a fresh topic with N change events (Avro, Confluent framing, registered schemas),
then, in the same run:
1. `cdfbridge-consumer run --until-caught-up` (a subprocess) into one table: rows/s over
   the process's whole life (start-up included) and its peak RSS;
2. ClickHouse's Kafka engine, from `kafka-engine-ddl`, into another table: rows/s from
   the DDL until all N rows are in the table;
and prints both and their ratio. Run against the local stack:

    .venv/bin/python bench/consumer_bench.py --rows 1000000
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from typing import Any

import clickhouse_connect
import fastavro
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from consumer import kafka_engine
from consumer.settings import ConsumerSection, ConsumerSettings
from schemas.avro import key_schema, value_schema
from schemas.naming import key_subject, value_subject
from schemas.settings import ClickHouseSettings, KafkaSettings, SchemaRegistrySettings

TABLE = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "customer", "type": "string", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "decimal(12,2)", "nullable": True, "metadata": {}},
        {"name": "quantity", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "ordered_at", "type": "timestamp", "nullable": True, "metadata": {}},
    ],
}


def main() -> None:
    args = parser().parse_args()
    topic = f"bench_{uuid.uuid4().hex[:8]}"
    database = topic
    admin = AdminClient({"bootstrap.servers": args.kafka})
    admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(timeout=30)
    clickhouse = clickhouse_connect.get_client(dsn=args.clickhouse)
    clickhouse.command(f"CREATE DATABASE `{database}`")
    try:
        started = time.monotonic()
        fill(args, topic)
        print(
            f"topic {topic}: {args.rows} rows in {args.partitions} partitions, "
            f"written in {time.monotonic() - started:.1f} s"
        )
        python_rps, rss_mib = python_consumer(args, topic, database)
        engine_rps = kafka_engine_consumer(args, topic, database, clickhouse)
        print(f"python consumer : {python_rps:>10,.0f} rows/s, peak RSS {rss_mib:.0f} MiB")
        print(f"kafka engine    : {engine_rps:>10,.0f} rows/s")
        print(f"ratio (python / kafka engine): {python_rps / engine_rps:.2f}x")
    finally:
        clickhouse.command(f"DROP DATABASE IF EXISTS `{database}` SYNC")
        admin.delete_topics([topic])[topic].result(timeout=30)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--kafka", default="127.0.0.1:9092")
    p.add_argument("--registry", default="http://127.0.0.1:8081/apis/ccompat/v7")
    p.add_argument("--clickhouse", default="http://127.0.0.1:8123")
    return p


def fill(args: argparse.Namespace, topic: str) -> None:
    """N snapshot rows, encoded with fastavro and framed with the registered schema ids."""
    registry = SchemaRegistryClient({"url": args.registry})
    value = value_schema(TABLE, "orders")
    key = key_schema(TABLE, ["id"], "orders")
    value_id = registry.register_schema(value_subject(topic), Schema(json.dumps(value), "AVRO"))
    key_id = registry.register_schema(key_subject(topic), Schema(json.dumps(key), "AVRO"))
    parsed_value, parsed_key = fastavro.parse_schema(value), fastavro.parse_schema(key)
    value_head, key_head = b"\0" + value_id.to_bytes(4, "big"), b"\0" + key_id.to_bytes(4, "big")
    producer = Producer(
        {
            "bootstrap.servers": args.kafka,
            "linger.ms": 50,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    now = int(time.time() * 1_000_000)
    for n in range(args.rows):
        row = {
            "id": n,
            "customer": f"customer-{n % 5000}",
            "amount": None,
            "quantity": n % 100,
            "ordered_at": None,
            "_change_type": "snapshot",
            "_commit_version": 0,
            "_commit_timestamp": now,
        }
        producer.produce(
            topic,
            key=key_head + encode(parsed_key, {"id": n}),
            value=value_head + encode(parsed_value, row),
        )
        if n % 100_000 == 0:
            producer.poll(0)
    producer.flush(120)


def encode(schema: Any, record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


def python_consumer(args: argparse.Namespace, topic: str, database: str) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDFBRIDGE_")} | {
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": args.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": args.registry,
        "CDFBRIDGE_CLICKHOUSE__URL": args.clickhouse,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__TOPIC": topic,
        "CDFBRIDGE_CONSUMER__GROUP": f"{topic}-python",
        "CDFBRIDGE_CONSUMER__TABLE": "by_python",
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
    }
    started = time.monotonic()
    subprocess.run(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "consumer", "--log-level", "WARNING", "run", "--until-caught-up"],
        env=env,
        check=True,
    )
    seconds = time.monotonic() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return args.rows / seconds, peak_kib / 1024


def kafka_engine_consumer(
    args: argparse.Namespace, topic: str, database: str, clickhouse: Any
) -> float:
    settings = ConsumerSettings(
        kafka=KafkaSettings(bootstrap_servers=args.kafka),
        schema_registry=SchemaRegistrySettings(url=args.registry),
        clickhouse=ClickHouseSettings(url=args.clickhouse, database=database),
        consumer=ConsumerSection(topic=topic, group=f"{topic}-python", table="by_kafka"),
    )
    plan = kafka_engine.plan(settings, f"{topic}-clickhouse")
    started = time.monotonic()
    kafka_engine.apply(settings, plan)
    table = f"`{database}`.`by_kafka`"
    while clickhouse.command(f"SELECT count() FROM {table}") < args.rows:  # noqa: S608
        time.sleep(0.05)
    seconds = time.monotonic() - started
    clickhouse.command(f"DROP TABLE {kafka_engine.pump(plan.target).name}")
    clickhouse.command(f"DROP TABLE {kafka_engine.queue(plan.target).name}")
    return args.rows / seconds


if __name__ == "__main__":
    main()
