"""A Kafka-engine group about to read messages whose structs have fewer fields than the
latest schema's: ClickHouse's Avro reader (26.9) refuses such a message ("The number of
leaves in record doesn't match the number of elements in tuple"), even with
input_format_avro_allow_missing_fields, so a Kafka table made from the latest schema loses
them to `<table>_kafka_errors`. That is a new subscriber of a topic whose structs gained
fields (from the generation's start), and an engine brought to a newer schema after two
struct additions (from the first message newer than its table: the middle schema's), or
before its old group committed anything (from the generation's start). So before such a
group reads:
1. look at the first message it would read in each partition: the schema ids of a
   partition only grow within a generation, so if that message's struct columns have the
   latest schema's shapes, the engine reads every message (`older_shapes`);
2. else has its table loaded from the lake at the bootstrap's boundary (consumer/rebuild/steps.py
   from the lake), and starts where the changes after it begin: every message from there on
   was written with the latest schema; what the engine failed to parse before is in the
   table now, so `<table>_kafka_errors` is emptied;
3. else (ClickHouse cannot read the Delta table) is refused, naming what works.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException

from consumer.group.registry import Schemas
from consumer.kafka_engine.ddl import errors
from consumer.kafka_engine.new_group import TIMEOUT_S, framed_at, reader
from consumer.rebuild.steps import builder_group, rebuild
from consumer.settings import ConsumerSettings
from consumer.tables.placement import Placement
from schemas.clickhouse import columns
from schemas.errors import ConfigError
from services import offsets
from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from services.kafka_errors import error_of
from services.lake import LakeUnreadableError
from services.service_errors import client_failure


def older_shapes(
    kafka: Mapping[str, Any],
    topic: str,
    starts: dict[int, int],
    schemas: Schemas,
    latest: int,
) -> list[str]:
    """Step 1: the struct columns whose shape in the first messages from `starts` (per
    partition; offset 0 for one not in it) is not the latest schema's."""
    newest = _structs(schemas.by_id(latest) or {"fields": []})
    probe = reader(kafka, "cdfbridge-kafka-engine-probe")
    try:
        return _differing(probe, topic, starts, schemas, latest, newest)
    except KafkaException as exc:
        where = str(kafka.get("bootstrap.servers", "?"))
        raise client_failure(
            error_of(exc), where, f"reading the first messages of {topic}"
        ) from exc
    finally:
        probe.close()


def _differing(
    probe: Consumer,
    topic: str,
    starts: dict[int, int],
    schemas: Schemas,
    latest: int,
    newest: dict[str, str],
) -> list[str]:
    """Each partition's first framed message from its start, its struct columns compared."""
    differing: set[str] = set()
    partitions = probe.list_topics(topic, timeout=TIMEOUT_S).topics[topic].partitions
    for partition in sorted(partitions):
        found = framed_at(probe, topic, partition, starts.get(partition, 0), 2**62)
        if found is None or found[1] == latest:
            continue
        older = _structs(schemas.by_id(found[1]) or {"fields": []})
        differing |= {name for name, kind in older.items() if newest.get(name, kind) != kind}
    return sorted(differing)


def bootstrapped(settings: ConsumerSettings, engine_group: str, shapes: list[str]) -> None:
    """Steps 2 and 3: the table loaded from the lake, and the engine's group set to follow
    the topic from there."""
    topic = settings.consumer.topic
    builder = builder_group(engine_group, "bootstrap")
    try:
        rebuild(settings, builder, "lake", move_live=False)
    except LakeUnreadableError as exc:
        raise ConfigError(
            f"topic {topic} holds messages whose struct columns ({', '.join(shapes)}) have "
            "fewer fields than its latest schema; ClickHouse's Avro reader cannot read them "
            "into the table, so the Kafka engine's group would lose their rows, and "
            f"ClickHouse cannot load the Delta table instead ({exc}). Let ClickHouse read the "
            "table (consumer.lake_location, [storage]) and apply again, or read the topic "
            "with `cdfbridge-consumer run`"
        ) from exc
    kafka = settings.kafka.client_config()
    offsets.reset(kafka, engine_group, offsets.at(topic, offsets.committed(kafka, builder, topic)))
    # What the engine failed to parse before is in the table now, loaded from the lake.
    unparsed = errors(settings.target()).name
    with sorted_errors(settings.clickhouse.url):
        placement = Placement.of(settings.clickhouse, connect(settings.clickhouse))
        placement.ddl(lambda on: f"TRUNCATE TABLE IF EXISTS {unparsed}{on}")


def _structs(value_schema: dict[str, Any]) -> dict[str, str]:
    """The columns holding a tuple (a struct, or structs in arrays and maps), with types."""
    return {name: kind for name, kind in columns(value_schema) if "Tuple(" in kind}
