"""Benchmark: the Python consumer against ClickHouse's Kafka engine on one topic.

Fills a fresh topic with N change events (Avro, Confluent framing, registered schemas),
then, in the same run and with the same batch limits (100k rows or --batch-seconds):
1. `cdfbridge-consumer run` (a subprocess, started cold): rows/s from its start until
   ClickHouse holds all N rows, and its peak RSS;
2. ClickHouse's Kafka engine, from the DDL `kafka-engine-ddl` generates: rows/s from
   the CREATE statements until ClickHouse holds all N rows;
and prints both and their ratio. Run against the local stack:

    .venv/bin/python bench/consumer_bench.py --rows 1000000

bench/consumer_shards_bench.py compares one server with a cluster of two shards.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import clickhouse_connect
import fastavro
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from output import bars, save

from consumer.kafka_engine import ddl as kafka_engine
from consumer.kafka_engine import plan as kafka_engine_plan
from consumer.section import ConsumerSection
from consumer.settings import ConsumerSettings
from schemas.avro import key_schema, value_schema
from schemas.naming import key_subject, value_subject
from services.settings import ClickHouseSettings, KafkaSettings, SchemaRegistrySettings

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


def new_topic(args: argparse.Namespace) -> tuple[Any, str]:
    """An admin client, and a fresh topic of args.partitions partitions (also the name of
    the benchmark's database)."""
    topic = f"bench_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": args.kafka})
    admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(timeout=30)
    return admin, topic


def main() -> None:
    args = parser().parse_args()
    admin, topic = new_topic(args)
    database = topic
    clickhouse = clickhouse_connect.get_client(dsn=args.clickhouse)
    clickhouse.command(f"CREATE DATABASE `{database}`")
    try:
        started = time.monotonic()
        fill(args, topic)
        print(
            f"topic {topic}: {args.rows} rows in {args.partitions} partitions, "
            f"written in {time.monotonic() - started:.1f} s"
        )
        python = python_consumer(args, topic, database, clickhouse)
        engine_rps = kafka_engine_consumer(args, topic, database, clickhouse)
        print(
            f"python consumer: {python.rows_per_s:>9,.0f} rows/s, "
            f"peak RSS {python.peak_rss_mib:.0f} MiB"
        )
        print(f"kafka engine   : {engine_rps:>9,.0f} rows/s")
        print(f"ratio python / kafka engine: {python.rows_per_s / engine_rps:.2f}x")
        result = {
            "rows": args.rows,
            "partitions": args.partitions,
            "consumer_rows_per_s": round(python.rows_per_s),
            "consumer_peak_rss_mib": round(python.peak_rss_mib),
            "kafka_engine_rows_per_s": round(engine_rps),
            "ratio": round(python.rows_per_s / engine_rps, 2),
        }
        draw = bars(
            ["cdfbridge-consumer", "Kafka engine"], [python.rows_per_s, engine_rps], "rows/s"
        )
        paths = save("consumer", result, draw, f"{args.rows:,} rows into ClickHouse")
        print(f"wrote {paths[0]} and {paths[1]}")
    finally:
        clickhouse.command(f"DROP DATABASE IF EXISTS `{database}` SYNC")
        for future in admin.delete_topics([topic, f"{topic}.dlq"]).values():
            future.result(timeout=30)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--kafka", default="127.0.0.1:9092")
    p.add_argument("--registry", default="http://127.0.0.1:8081/apis/ccompat/v7")
    p.add_argument("--clickhouse", default="http://127.0.0.1:8123")
    p.add_argument(
        "--batch-seconds",
        type=float,
        default=1.0,
        help="both consumers' flush interval; the last partial batches wait this long",
    )
    p.add_argument("--num-consumers", type=int, default=1, help="the Kafka engine's consumers")
    return p


def fill(args: argparse.Namespace, topic: str) -> None:
    """N snapshot rows, encoded with fastavro and framed with the registered schema ids."""
    registry = SchemaRegistryClient(SchemaRegistrySettings(url=args.registry).client_config())
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
            "_generation": 0,
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


@dataclass(frozen=True)
class Figures:
    rows_per_s: float
    peak_rss_mib: float


def python_consumer(
    args: argparse.Namespace,
    topic: str,
    database: str,
    clickhouse: Any,
    run: str = "python",
    extra: dict[str, str] | None = None,
) -> Figures:
    """`cdfbridge-consumer run` as a service, in a group of its own (`run`): from its start
    until ClickHouse holds every row; then SIGTERM, and the peak RSS of the finished
    process. `extra` env vars put its table elsewhere (a cluster)."""
    env = (
        {k: v for k, v in os.environ.items() if not k.startswith("CDFBRIDGE_")}
        | {
            "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": args.kafka,
            "CDFBRIDGE_SCHEMA_REGISTRY__URL": args.registry,
            "CDFBRIDGE_CLICKHOUSE__URL": args.clickhouse,
            "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
            "CDFBRIDGE_CONSUMER__TOPIC": topic,
            "CDFBRIDGE_CONSUMER__GROUP": f"{topic}-{run}",
            "CDFBRIDGE_CONSUMER__TABLE": "by_python",
            "CDFBRIDGE_CONSUMER__BATCH_SECONDS": str(args.batch_seconds),
            "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
        }
        | (extra or {})
    )
    started = time.monotonic()
    process = subprocess.Popen(  # noqa: S603 - our own CLI
        [sys.executable, "-m", "consumer", "--log-level", "WARNING", "run"], env=env
    )
    seconds = wait_for_rows(clickhouse, f"`{database}`.`by_python`", args.rows, started)
    process.send_signal(signal.SIGTERM)
    if process.wait(timeout=120) != 0:
        raise SystemExit(f"the consumer exited with {process.returncode}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return Figures(args.rows / seconds, peak_kib / 1024)


def kafka_engine_consumer(
    args: argparse.Namespace, topic: str, database: str, clickhouse: Any
) -> float:
    """The DDL `kafka-engine-ddl` generates, with the same batch limits; from CREATE until
    ClickHouse holds every row."""
    settings = ConsumerSettings(
        kafka=KafkaSettings(bootstrap_servers=args.kafka),
        schema_registry=SchemaRegistrySettings(url=args.registry),
        clickhouse=ClickHouseSettings(url=args.clickhouse, database=database),
        consumer=ConsumerSection(
            topic=topic,
            group=f"{topic}-python",
            table="by_kafka",
            batch_seconds=args.batch_seconds,
        ),
    )
    plan = kafka_engine_plan.plan(settings, f"{topic}-clickhouse", args.num_consumers)
    started = time.monotonic()
    kafka_engine_plan.apply(settings, plan)
    seconds = wait_for_rows(clickhouse, plan.target.name, args.rows, started)
    clickhouse.command(f"DROP TABLE {kafka_engine.pump(plan.target).name}")
    clickhouse.command(f"DROP TABLE {kafka_engine.errors_pump(plan.target).name}")
    clickhouse.command(f"DROP TABLE {kafka_engine.queue(plan.target).name}")
    return args.rows / seconds


def wait_for_rows(clickhouse: Any, table: str, rows: int, started: float) -> float:
    """Seconds from `started` until `table` holds `rows` rows (the keys are distinct)."""
    while True:
        exists = clickhouse.command(f"EXISTS TABLE {table}")
        if exists and clickhouse.command(f"SELECT count() FROM {table}") >= rows:  # noqa: S608
            return time.monotonic() - started
        time.sleep(0.02)


if __name__ == "__main__":
    main()
