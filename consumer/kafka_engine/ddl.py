"""DDL for ClickHouse to ingest a topic itself, into the same kind of table:

1. the target ReplacingMergeTree and its `<table>_current` view (as the Python consumer
   creates them; `_version` and `_is_deleted` are MATERIALIZED from schemas.changes, so
   ClickHouse computes them on every insert, whichever path it comes from);
2. `<table>_kafka_errors`: where messages the Kafka engine cannot parse go, with their
   topic, partition, offset, raw bytes and error (its dead-letter table);
3. `<table>_kafka`: a Kafka-engine table reading the topic as AvroConfluent, in its own
   consumer group, with kafka_handle_error_mode = 'stream';
4. `<table>_kafka_mv` and `<table>_kafka_errors_mv`: materialized views moving each block
   from 3. into 1., and its unparsable messages into 2.

consumer/kafka_engine/plan.py fills these in from the settings and the registry, and
applies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import SecretStr

from consumer.tables.placement import distributed_sql, engine, on_cluster
from consumer.tables.table import create_table_sql, current_view_sql
from consumer.tables.table_check import Columns
from schemas.clickhouse import InputColumn, literal, quote
from schemas.target import Target
from services.settings import KafkaSettings, masked_url
from services.table_marks import BUILT_FROM, queue

HIDDEN = "******"
# The Kafka table's comment: the value schema its columns were made from and the group it
# reads with (consumer/kafka_engine/evolve.py brings it to a newer schema).


@dataclass(frozen=True)
class KafkaSource:
    broker_list: str  # as ClickHouse reaches the brokers
    topic: str
    group: str
    # As ClickHouse reaches the registry, with its basic-auth credentials if any.
    registry_url: str = field(repr=False)
    num_consumers: int = 1
    # Blocks as the Python consumer cuts its batches: this many rows, or this old.
    max_block_rows: int = 100_000
    flush_interval_ms: int = 5_000
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(
        cls, kafka: KafkaSettings, topic: str, group: str, registry_url: SecretStr
    ) -> KafkaSource:
        password = kafka.sasl_password.get_secret_value() if kafka.sasl_password else None
        return cls(
            kafka.bootstrap_servers,
            topic,
            group,
            registry_url.get_secret_value(),
            security_protocol=kafka.security_protocol,
            sasl_mechanism=kafka.sasl_mechanism,
            sasl_username=kafka.sasl_username,
            sasl_password=password,
        )


# Messages the Kafka engine cannot parse (kafka_handle_error_mode = 'stream'): its
# dead-letter table, since one bad message would otherwise stop the ingestion.
ERRORS_COLUMNS = (
    "`topic` String, `partition` UInt64, `offset` UInt64, `raw_message` String, "
    "`error` String, `seen_at` DateTime64(3)"
)
ERRORS_SELECT = (
    "_topic AS `topic`, _partition AS `partition`, _offset AS `offset`, "
    "_raw_message AS `raw_message`, _error AS `error`, now64(3) AS `seen_at`"
)


def errors(target: Target) -> Target:
    return target.renamed(f"{target.table}_kafka_errors")


def errors_pump(target: Target) -> Target:
    return target.renamed(f"{target.table}_kafka_errors_mv")


def pump(target: Target) -> Target:
    return target.renamed(f"{target.table}_kafka_mv")


def statements(
    target: Target,
    columns: Columns,
    inputs: Sequence[InputColumn],
    order_by: Sequence[str],
    dedup_window: int,
    source: KafkaSource,
    reveal_secrets: bool = False,
    partition_by: str = "",
    schema_id: int = 0,
    shard_by: Sequence[str] = (),
    keeper: bool = True,
) -> list[str]:
    """The DDL, in the order to run it: the target's tables, then the engine's; SASL
    passwords are masked unless revealed. On a cluster with Keeper: ON CLUSTER, Replicated;
    without (keeper=False): a ReplacingMergeTree per shard, the DDL to run on every server."""
    replicated = bool(target.cluster) and keeper
    on = on_cluster(target.cluster) if replicated else ""
    kind = engine(replicated)
    tables = [
        create_table_sql(target.local, columns, order_by, dedup_window, partition_by, on, kind)
    ]
    if target.cluster:
        tables.append(distributed_sql(target, shard_by or order_by, on))
    tables.append(current_view_sql(target, on))
    return tables + engine_statements(target, inputs, source, reveal_secrets, schema_id, on)


def engine_statements(
    target: Target,
    inputs: Sequence[InputColumn],
    source: KafkaSource,
    reveal_secrets: bool = False,
    schema_id: int = 0,
    on_cluster: str = "",
) -> list[str]:
    """The Kafka table, its errors table and their views. The Kafka table reads the Avro
    names; its view writes the Delta names into the target, which on a cluster is the
    Distributed table: each server's engine reads some partitions, and every row goes to
    its key's shard. Its comment names the value schema (schema_id) its columns come from."""
    body = ", ".join(f"{quote(c.avro_name)} {c.input_type}" for c in inputs)
    names = ", ".join(
        c.expression if c.expression == quote(c.name) else f"{c.expression} AS {quote(c.name)}"
        for c in inputs
    )
    on, built = on_cluster, BUILT_FROM.format(schema_id=schema_id, group=source.group)
    return [
        f"CREATE TABLE IF NOT EXISTS {errors(target).name}{on} ({ERRORS_COLUMNS})\n"
        f"ENGINE = MergeTree ORDER BY (`topic`, `partition`, `offset`)",
        f"CREATE TABLE IF NOT EXISTS {queue(target).name}{on} ({body})\n"
        f"ENGINE = Kafka\nSETTINGS {_kafka_settings(source, reveal_secrets)}\n"
        f"COMMENT {literal(built)}",
        _view_sql(pump(target), target, queue(target), names, "length(_error) = 0", on),
        _view_sql(
            errors_pump(target),
            errors(target),
            queue(target),
            ERRORS_SELECT,
            "length(_error) > 0",
            on,
        ),
    ]


def _view_sql(
    view: Target, into: Target, source: Target, select: str, where: str, on_cluster: str
) -> str:
    query = f"SELECT {select} FROM {source.name} WHERE {where}"  # noqa: S608 - quoted names
    return (
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {view.name}{on_cluster} TO {into.name}\nAS {query}"
    )


def _kafka_settings(source: KafkaSource, reveal_secrets: bool) -> str:
    values: dict[str, str | int] = {
        "kafka_broker_list": source.broker_list,
        "kafka_topic_list": source.topic,
        "kafka_group_name": source.group,
        "kafka_format": "AvroConfluent",
        "format_avro_schema_registry_url": (
            source.registry_url if reveal_secrets else masked_url(source.registry_url, HIDDEN)
        ),
        "kafka_num_consumers": source.num_consumers,
        "kafka_max_block_size": source.max_block_rows,
        "kafka_flush_interval_ms": source.flush_interval_ms,
        "kafka_handle_error_mode": "stream",
        "input_format_avro_allow_missing_fields": 1,
    }
    if source.security_protocol != "PLAINTEXT":
        values["kafka_security_protocol"] = source.security_protocol.lower()
    if source.sasl_mechanism:
        values["kafka_sasl_mechanism"] = source.sasl_mechanism
    if source.sasl_username:
        values["kafka_sasl_username"] = source.sasl_username
    if source.sasl_password:
        values["kafka_sasl_password"] = source.sasl_password if reveal_secrets else HIDDEN
    return ",\n    ".join(f"{key} = {literal(value)}" for key, value in values.items())
