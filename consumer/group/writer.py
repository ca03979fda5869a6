"""Write one unit (a batch of each of several partitions) to ClickHouse: evolve the table,
insert, isolate poison.

This is step 2 of the commit path (consumer/group/commit.py), run on the write pool: when
`write` returns, the unit is in ClickHouse and its poison messages are in the dead-letter
topic, acknowledged by Kafka. No per-row Python bytecode on the happy path: the batches
already hold the values, their 5-byte headers (to spot new schema ids) are gathered with
map(); ClickHouse decodes the Avro.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

from consumer.freshness import commit_times
from consumer.group import isolate, reread
from consumer.group.batch import PartitionBatch, Written
from consumer.group.dlq import DeadLetters
from consumer.group.kafka import topic_id
from consumer.group.registry import HEADER, Schemas, schema_id
from consumer.group.sink import Sink
from consumer.group.tombstones import payload
from consumer.group.units import Unit
from consumer.settings import ConsumerSettings
from consumer.tables import table
from consumer.tables.column_types import extends
from consumer.tables.placement import Placement
from schemas.clickhouse import InputColumn, input_columns
from schemas.clickhouse import columns as clickhouse_columns
from schemas.target import Target
from services.clickhouse_client import connect
from services.clickhouse_errors import BadDataError, sorted_errors
from services.progress_topic import Progress

log = logging.getLogger(__name__)
_HEADER = itemgetter(slice(0, HEADER))  # magic byte and schema id of a value
POOL_SPARE = 4  # ClickHouse connections beyond the write threads'


class BatchWriter:
    def __init__(
        self,
        sink: Sink,
        schemas: Schemas,
        dead_letters: DeadLetters,
        order_by: Sequence[str],
        dedup_window: int,
        kafka_config: dict[str, Any],
        partition_by: str = "",
        placement: Placement | None = None,
        shard_by: Sequence[str] = (),
    ) -> None:
        self.sink = sink
        self.placement = placement or Placement(sink.client)
        self.shard_by = list(shard_by)  # a cluster's sharding key: the primary key
        self.schemas = schemas
        self.dead_letters = dead_letters
        self.order_by = list(order_by)
        self.dedup_window = dedup_window
        self.partition_by = partition_by
        self.kafka_config = kafka_config  # to read a refused batch again
        self._known_headers: set[bytes] = set()
        # Every column of the schemas seen, by Delta name: a table column no schema seen has
        # is left out of inserts and reads as its default.
        self.inputs: dict[str, InputColumn] = {}
        # Each schema's own columns, by value header: a struct is read as its schema wrote it.
        self._own: dict[bytes, dict[str, InputColumn]] = {}
        self.nullable_tuple: bool | None = None  # asked of the server once

    @classmethod
    def create(
        cls, settings: ConsumerSettings, target: Target, schemas: Schemas, dead_letters: DeadLetters
    ) -> BatchWriter:
        """A writer for the settings' table, which it creates or checks from the value schema
        of the topic's generation."""
        # compress=False: loopback, CPU matters more. A connection for each write thread and
        # the process's other calls (schemas, placement, counts) beside them.
        pool = settings.consumer.write_threads + POOL_SPARE
        client = connect(settings.clickhouse, pool, compress=False)
        topic = settings.consumer.topic
        order_by = schemas.order_by(topic, settings.consumer.primary_key)
        found_id = topic_id(settings.kafka.client_config(), topic)
        sink = Sink(client, target, settings.registry_url_for_clickhouse(), found_id)
        with sorted_errors():
            placement = Placement.of(settings.clickhouse, client)
        writer = cls(
            sink,
            schemas,
            dead_letters,
            order_by,
            settings.consumer.deduplication_window,
            settings.kafka.client_config(),
            settings.consumer.partition_by,
            placement,
            schemas.shard_by(topic, settings.consumer.primary_key),
        )
        named = Progress(settings.kafka.client_config(), topic).read().value_schema
        writer.prepare(schemas.topic_value(topic, named)[1])
        return writer

    def prepare(self, value_schema: dict[str, Any]) -> None:
        """Create the table from the schema, or check it and add new columns."""
        client, target = self.sink.client, self.sink.target
        with sorted_errors():
            if self.nullable_tuple is None:
                self.nullable_tuple = table.nullable_tuples(client)
            wanted = clickhouse_columns(value_schema, self.nullable_tuple)
            added = table.ensure(
                self.placement,
                target,
                wanted,
                self.order_by,
                self.dedup_window,
                self.partition_by,
                self.shard_by,
            )
        if added:
            log.info("added columns", extra={"table": target.name, "columns": added})
        for column in input_columns(value_schema, self.nullable_tuple):
            known = self.inputs.get(column.name)
            # An older schema's struct is read as the newer one's, its added fields missing.
            if known is None or extends(column.input_type, known.input_type):
                self.inputs[column.name] = column

    @property
    def columns(self) -> list[InputColumn]:
        return list(self.inputs.values())

    def write(self, unit: Unit) -> list[Written]:
        """Insert the unit as one block with its dedup token (a recorded unit's ranges of
        other partitions read again first); a block ClickHouse refuses for its data is split,
        batch by batch, to find the poison, which is dead-lettered. A Written per batch."""
        own = [batch.values() for batch in unit.batches]
        values = list(chain.from_iterable(own))
        for partition, first, last in unit.missing:
            again = PartitionBatch(unit.topic, partition, first, last)
            values += [payload(m) or b"" for m in reread.messages(self.kafka_config, again)]
        if not values:
            return [Written(0, 0) for _ in unit.batches]
        self._evolve(values)
        try:
            self._insert(values, unit.token)
        except BadDataError as exc:
            log.warning(
                "insert refused, isolating bad messages",
                extra={"topic": unit.topic, "token": unit.token, "error": str(exc)[:300]},
            )
            return [self._isolate(batch) for batch in unit.batches]
        return [Written(len(rows), 0, commit_times(rows, self.schemas)) for rows in own]

    def _insert(self, values: list[bytes], token: str) -> None:
        """One insert per value schema in values: ClickHouse fills a top-level column a
        message lacks, not a struct's field, so each schema's structs are read as written.
        Mostly one schema: one insert under the batch's token, values not split."""
        headers = sorted(set(map(_HEADER, values)))
        if len(headers) == 1:
            self.sink.insert(values, self._columns(headers[0]), token)
            return
        for header in headers:
            part = [value for value in values if value[:HEADER] == header]
            self.sink.insert(part, self._columns(header), f"{token}:{header.hex()}")

    def _columns(self, header: bytes) -> list[InputColumn]:
        own = self._own.get(header, {})
        return [own.get(name, column) for name, column in self.inputs.items()]

    def _evolve(self, values: list[bytes]) -> None:
        """Step before an insert: a schema id not seen yet may bring new optional fields."""
        headers = set(map(_HEADER, values)) - self._known_headers
        for header in headers:
            found = schema_id(header)
            schema = None if found is None else self.schemas.by_id(found)
            if schema is None:
                continue  # not framed, or unknown to the registry: poison, isolated on insert
            self.prepare(schema)
            columns = input_columns(schema, bool(self.nullable_tuple))  # prepare() asked
            self._own[header] = {column.name: column for column in columns}
            self._known_headers.add(header)

    def _isolate(self, batch: PartitionBatch) -> Written:
        messages = reread.messages(self.kafka_config, batch)
        good, poison = isolate.undecodable(messages, self.schemas)
        poison += isolate.insert_isolating(
            good,
            # Read again with their payloads only (reread.messages).
            lambda part, token: self._insert([payload(m) or b"" for m in part], token),
        )
        for message, why in poison:
            self.dead_letters.send(message, why)
        if poison:
            self.dead_letters.flush(batch.topic)  # acknowledged before the offsets pass them
        return Written(len(messages) - len(poison), len(poison))
