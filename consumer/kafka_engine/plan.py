"""The Kafka-engine DDL (consumer/kafka_engine/ddl.py) for one topic's settings and table: its
columns from the registry's latest value schema, its blocks cut like the consumer's batches,
and applied to ClickHouse after the target table is created or checked as the consumer does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from consumer.group import history
from consumer.group.registry import Schemas
from consumer.kafka_engine.ddl import KafkaSource, engine_statements, statements
from consumer.kafka_engine.evolve import evolve, recorded_group
from consumer.kafka_engine.late import bootstrapped, older_shapes
from consumer.kafka_engine.rebuild import rebuilt_group
from consumer.settings import ConsumerSettings
from consumer.tables import table
from consumer.tables.placement import Placement
from consumer.tables.table_check import Columns
from schemas.clickhouse import InputColumn, input_columns
from schemas.clickhouse import columns as clickhouse_columns
from schemas.progress import Generation
from schemas.target import Target
from services import offsets
from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from services.progress_topic import Progress
from services.table_marks import built_from, marked


@dataclass(frozen=True)
class Plan:
    target: Target
    columns: Columns
    inputs: list[InputColumn]
    order_by: list[str]
    dedup_window: int
    source: KafkaSource
    partition_by: str = ""
    schema_id: int = 0  # the value schema the columns come from: the topic's latest
    shard_by: tuple[str, ...] = ()  # on a cluster, the primary key
    keeper: bool = True  # on a cluster: False when its DDL runs server by server (node_urls)
    nullable_tuple: bool = True  # the server stores Nullable(Tuple)

    def statements(self, reveal_secrets: bool = False) -> list[str]:
        return statements(
            self.target,
            self.columns,
            self.inputs,
            self.order_by,
            self.dedup_window,
            self.source,
            reveal_secrets,
            self.partition_by,
            self.schema_id,
            self.shard_by,
            self.keeper,
        )

    def engine_ddl(self, on_cluster: str) -> list[str]:
        """The engine's DDL, secrets revealed, for an ON CLUSTER clause ("": none)."""
        return engine_statements(
            self.target, self.inputs, self.source, True, self.schema_id, on_cluster
        )


def plan(
    settings: ConsumerSettings, group: str, num_consumers: int = 1, nullable_tuple: bool = True
) -> Plan:
    """The Kafka-engine DDL for the settings' topic and table, from the registry's schemas;
    nullable_tuple=False for servers without Nullable(Tuple) (see `nullable_tuples`)."""
    schemas = Schemas(settings.schema_registry.client_config())
    topic = settings.consumer.topic
    named = Progress(settings.kafka.client_config(), topic).read().value_schema
    schema_id, value_schema = schemas.topic_value(topic, named)
    source = KafkaSource.from_settings(
        settings.kafka, topic, group, settings.registry_url_for_clickhouse()
    )
    return Plan(
        settings.target(),
        clickhouse_columns(value_schema, nullable_tuple),
        input_columns(value_schema, nullable_tuple),
        schemas.order_by(topic, settings.consumer.primary_key),
        settings.consumer.deduplication_window,
        replace(
            source,
            broker_list=settings.kafka_for_clickhouse(),
            sasl_mechanism=(
                settings.consumer.kafka_sasl_mechanism_for_clickhouse or source.sasl_mechanism
            ),
            num_consumers=num_consumers,
            max_block_rows=settings.consumer.batch_rows,
            flush_interval_ms=int(settings.consumer.batch_seconds * 1000),
        ),
        settings.consumer.partition_by,
        schema_id,
        tuple(schemas.shard_by(topic, settings.consumer.primary_key)),
        keeper=not settings.clickhouse.node_urls,
        nullable_tuple=nullable_tuple,
    )


def nullable_tuples(settings: ConsumerSettings) -> bool:
    """Whether the settings' ClickHouse stores Nullable(Tuple)."""
    with sorted_errors(settings.clickhouse.url):
        return table.nullable_tuples(connect(settings.clickhouse))


def apply(settings: ConsumerSettings, chosen: Plan) -> None:
    """With `rebuild = "auto"`, rebuild a table behind its topic's generation first
    (consumer/kafka_engine/rebuild.py); check that the topic holds what the engine's group
    needs, create (or check) the target table, bring Kafka-engine objects made from an older
    value schema up to the latest (consumer/kafka_engine/evolve.py; where an apply was
    killed in that step, read on with the group it recorded), load the table from the
    lake where the engine's group would start at messages it cannot parse
    (consumer/kafka_engine/late.py), then create the Kafka table and its views where
    missing. A table rebuilt for a new generation is planned again: `chosen` may have been
    made from the older generation's schema, just before the resync."""
    with sorted_errors(settings.clickhouse.url):
        placement = Placement.of(settings.clickhouse, connect(settings.clickhouse))
        moved = rebuilt_group(placement, settings, chosen.target, chosen.source.group)
    if moved is not None:  # rebuilt for the generation: its schema, whatever was planned
        source = chosen.source
        again = plan(settings, source.group, source.num_consumers, chosen.nullable_tuple)
        chosen = replace(again, source=replace(again.source, group=moved))
    with sorted_errors(settings.clickhouse.url):
        before = built_from(placement.client, chosen.target)
        resumed = None  # an evolve killed after it dropped the Kafka table: its new group
        if before is None and moved is None:
            resumed = recorded_group(marked(placement.client, chosen.target), chosen.source.group)
    if resumed is not None:
        chosen = replace(chosen, source=replace(chosen.source, group=resumed))
    generation = Progress(settings.kafka.client_config(), chosen.source.topic).read().generation
    _first_read(settings, chosen, generation, new=before is None and resumed is None)
    with sorted_errors(settings.clickhouse.url):
        table.ensure(
            placement,
            chosen.target,
            chosen.columns,
            chosen.order_by,
            chosen.dedup_window,
            chosen.partition_by,
            chosen.shard_by,
        )
        kafka = settings.kafka.client_config()
        source = chosen.source
        group = evolve(
            placement,
            kafka,
            chosen.target,
            source.topic,
            source.group,
            chosen.schema_id,
            generation.start,
        )
    if resumed is not None or (
        before is not None and before.schema_id < chosen.schema_id
    ):  # a re-read
        _readable(settings, chosen, generation, group)
    chosen = replace(chosen, source=replace(source, group=group))
    with sorted_errors(settings.clickhouse.url):
        placement.ddl_each(chosen.engine_ddl)


def _readable(settings: ConsumerSettings, chosen: Plan, generation: Generation, group: str) -> None:
    """An engine brought to a newer schema re-reads from the first message newer than its
    table (where the old group read nothing: from the generation's start); when that message
    has older struct shapes (after two struct additions, the middle schema's; or the first
    messages, which the old engine never read), its table is loaded from the lake and the
    group set after it (consumer/kafka_engine/late.py)."""
    kafka, topic = settings.kafka.client_config(), chosen.source.topic
    schemas = Schemas(settings.schema_registry.client_config())
    starts = {**generation.start, **offsets.committed(kafka, group, topic)}
    shapes = older_shapes(kafka, topic, starts, schemas, chosen.schema_id)
    if shapes:
        bootstrapped(settings, group, shapes)


def _first_read(
    settings: ConsumerSettings, chosen: Plan, generation: Generation, new: bool
) -> None:
    """The engine's group must find the topic's history it needs (consumer/group/history.py).
    A new engine's group (no Kafka table yet, no offsets) is set to the start of the topic's
    current generation, not older ones' rows, unless the engine cannot read that
    generation's first messages: its table is then loaded from the lake first
    (consumer/kafka_engine/late.py). An engine in place may not have committed yet; its
    group is live and is not moved under it."""
    kafka, topic, group = settings.kafka.client_config(), chosen.source.topic, chosen.source.group
    found, missing = history.group_gaps(kafka, group, topic, generation)
    if missing:
        gone = history.refusal(topic, f"the Kafka engine's group {group}", missing)
        raise history.HistoryGoneError(
            f"{gone} Then apply again: cdfbridge-consumer --group {group} bootstrap leaves "
            "the group where the table ends"
        )
    if not new or any(p.committed >= 0 for p in found):
        return
    schemas = Schemas(settings.schema_registry.client_config())
    shapes = older_shapes(kafka, topic, generation.start, schemas, chosen.schema_id)
    if shapes:
        bootstrapped(settings, group, shapes)
    elif generation.start:
        offsets.reset(kafka, group, offsets.at(topic, generation.start))
