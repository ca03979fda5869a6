"""Shared by the consumer's integration tests: Avro change events as the producer writes
them, and consumer settings pointing at the test services."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from consumer.process import Consumers
from consumer.section import ConsumerSection
from consumer.settings import ConsumerSettings
from consumer.topics import resolve
from schemas.avro import key_schema, value_schema
from services.settings import ClickHouseSettings, KafkaSettings, SchemaRegistrySettings
from tests.endpoints import Endpoints

ORDERS = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
    ],
}
COMMITTED_AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(autouse=True, scope="module")
def orphan_dead_letter_topics_removed(kafka_admin: Any) -> Iterator[None]:
    """The consumer creates `<topic>.dlq`; once a test's topic is gone, so is its DLQ."""
    yield
    topics = set(kafka_admin.list_topics(timeout=10).topics)
    orphans = [t for t in topics if t.endswith(".dlq") and t.removesuffix(".dlq") not in topics]
    for future in kafka_admin.delete_topics(orphans).values() if orphans else ():
        future.result(timeout=30)


def with_column(table_schema: dict[str, Any], name: str, kind: str) -> dict[str, Any]:
    extra = {"name": name, "type": kind, "nullable": True, "metadata": {}}
    return {**table_schema, "fields": [*table_schema["fields"], extra]}


class Changes:
    """Produces change events for one topic, keyed and framed like the producer's."""

    def __init__(
        self,
        endpoints: Endpoints,
        topic: str,
        table_schema: dict[str, Any] = ORDERS,
        primary_key: tuple[str, ...] = ("id",),
    ) -> None:
        self.topic = topic
        self.generation = 0  # the `_generation` each value carries, when its schema has it
        self.primary_key = primary_key
        self.registry = endpoints.registry_client()
        self.producer = Producer({"bootstrap.servers": endpoints.kafka, "linger.ms": 5})
        self.use_schema(table_schema)
        self._key = AvroSerializer(
            self.registry, json.dumps(key_schema(table_schema, primary_key, "orders"))
        )

    def use_schema(self, table_schema: dict[str, Any], generation: bool = True) -> None:
        """generation=False: values as earlier releases wrote them, without `_generation`."""
        self.value_schema = value_schema(table_schema, "orders", generation=generation)
        self._value = AvroSerializer(self.registry, json.dumps(self.value_schema))

    def send(self, rows: Iterable[dict[str, Any]], change: str, version: int) -> None:
        for row in rows:
            value = {
                **row,
                "_change_type": change,
                "_commit_version": version,
                "_commit_timestamp": COMMITTED_AT,
                "_generation": self.generation,  # left out by a schema without it
            }
            key = {column: row[column] for column in self.primary_key}
            self.send_raw(
                self._key(key, SerializationContext(self.topic, MessageField.KEY)),
                self._value(value, SerializationContext(self.topic, MessageField.VALUE)),
            )
        self.producer.flush(30)

    def send_raw(self, key: bytes | None, value: bytes | None, partition: int = -1) -> None:
        self.producer.produce(self.topic, key=key, value=value, partition=partition)
        self.producer.flush(30)


def order(n: int, name: str | None = None) -> dict[str, Any]:
    return {"id": n, "name": name if name is not None else f"o{n}", "amount": Decimal(n) / 4}


def settings(endpoints: Endpoints, topic: str, database: str, **consumer: Any) -> ConsumerSettings:
    section = {
        "topic": topic,
        "group": f"{topic}-group",
        "batch_seconds": 0.3,
        "metrics_port": 0,
        "max_backoff_seconds": 2.0,
        **consumer,
    }
    return ConsumerSettings(
        kafka=KafkaSettings(bootstrap_servers=endpoints.kafka),
        schema_registry=SchemaRegistrySettings(url=endpoints.registry),
        clickhouse=ClickHouseSettings(url=endpoints.clickhouse, database=database),
        consumer=ConsumerSection(
            registry_url_for_clickhouse=endpoints.registry_for_clickhouse, **section
        ),
    )


def consumer_env(monkeypatch: pytest.MonkeyPatch, endpoints: Endpoints, database: str) -> None:
    """The env vars `cdfbridge-consumer` (its CLI, `main`) reads to reach the test services,
    as the tests and as ClickHouse's Kafka engine reach them."""
    for name, value in {
        "KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "SCHEMA_REGISTRY__URL": endpoints.registry,
        "CLICKHOUSE__URL": endpoints.clickhouse,
        "CLICKHOUSE__DATABASE": database,
        "CONSUMER__KAFKA_FOR_CLICKHOUSE": endpoints.kafka_for_clickhouse,
        "CONSUMER__REGISTRY_URL_FOR_CLICKHOUSE": endpoints.registry_for_clickhouse,
    }.items():
        monkeypatch.setenv(f"CDFBRIDGE_{name}", value)


def resolved(clickhouse: Any, database: str, table: str, columns: str) -> list[tuple[Any, ...]]:
    """Every key's last change as FINAL keeps it (deleted or not): columns, then _version
    and _is_deleted, ordered by the columns."""
    return list(
        clickhouse.query(
            f"SELECT {columns}, _version, _is_deleted FROM `{database}`.`{table}` FINAL "
            f"ORDER BY {columns}"
        ).result_rows
    )


def wait_until_resolved_as(
    clickhouse: Any, database: str, table: str, other: str, columns: str
) -> list[tuple[Any, ...]]:
    """Until table (the Kafka engine's) resolves as other does, for 90 s at most; returns
    other's rows. The engine's committed offsets never reach a transactional topic's end
    (its last offset is a commit marker), so its table is what tells."""
    wanted, deadline = resolved(clickhouse, database, other, columns), time.monotonic() + 90
    while resolved(clickhouse, database, table, columns) != wanted:
        assert time.monotonic() < deadline, f"{table} does not resolve as {other} after 90 s"
        time.sleep(0.5)
    return wanted


def verify_settings(
    endpoints: Endpoints, database: str, path: str, table: str = "t", **verify: Any
) -> Any:
    """cdfbridge-verify's settings for the Delta table at path against `table` in database;
    `verify` adds to its section (topic, latest, wait_seconds)."""
    from verify.settings import VerifySettings

    return VerifySettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        clickhouse={"url": endpoints.clickhouse, "database": database},
        verify={"table": path, "clickhouse_table": table, **verify},
    )


@contextmanager
def consumers_of(
    endpoints: Endpoints, topics: list[str], database: str, group: str
) -> Iterator[Consumers]:
    """One consumer process's `Consumers` for every topic (one group member), running on a
    thread while the block runs; stopped after it, and required to have ended."""
    one = settings(endpoints, topics[0], database, group=group)
    section = one.consumer.model_copy(update={"topic": "", "topics": topics})
    consumers = Consumers(resolve(one.model_copy(update={"consumer": section})))
    running = threading.Thread(target=consumers.run)
    running.start()
    try:
        yield consumers
    finally:
        consumers.stop()
        running.join(120)
    assert not running.is_alive(), "the consumers did not stop within 120 s"


def joined_member(kafka: str, group: str, topic: str) -> Any:
    """A confluent-kafka consumer in group, subscribed to topic and given its partitions,
    that commits nothing: a running member, for the caller to close."""
    from confluent_kafka import Consumer

    member = Consumer({"bootstrap.servers": kafka, "group.id": group, "enable.auto.commit": False})
    member.subscribe([topic])
    deadline = time.monotonic() + 60
    while not member.assignment():
        assert time.monotonic() < deadline, "the member got no partitions"
        member.poll(0.5)
    return member


def wait_until_read(kafka: str, group: str, topic: str) -> None:
    """Wait (90 s at most) until group has committed everything readable in topic."""
    from services.offsets import positions

    deadline = time.monotonic() + 90
    while any(p.lag for p in positions({"bootstrap.servers": kafka}, group, topic)):
        assert time.monotonic() < deadline, f"the group {group} did not read {topic} to its end"
        time.sleep(0.5)
