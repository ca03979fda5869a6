"""Write one partition batch to ClickHouse: evolve the table, insert, isolate poison.

No per-row Python bytecode on the happy path: the batch already holds the values, their
5-byte headers (to spot new schema ids) are gathered with map(); ClickHouse decodes the
Avro.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from consumer import isolate, reread, table
from consumer.batch import PartitionBatch
from consumer.clickhouse_errors import sorted_errors
from consumer.dlq import DeadLetters
from consumer.errors import BadDataError
from consumer.registry import HEADER, Schemas, schema_id
from consumer.settings import ConsumerSettings
from consumer.sink import Sink, connect
from consumer.table import Target
from schemas.clickhouse import InputColumn, input_columns
from schemas.clickhouse import columns as clickhouse_columns

log = logging.getLogger(__name__)
_HEADER = itemgetter(slice(0, HEADER))  # magic byte and schema id of a value


@dataclass(frozen=True)
class Written:
    rows: int
    dead_letters: int


class BatchWriter:
    def __init__(
        self,
        sink: Sink,
        schemas: Schemas,
        dead_letters: DeadLetters,
        order_by: Sequence[str],
        dedup_window: int,
        kafka_config: dict[str, Any],
    ) -> None:
        self.sink = sink
        self.schemas = schemas
        self.dead_letters = dead_letters
        self.order_by = list(order_by)
        self.dedup_window = dedup_window
        self.kafka_config = kafka_config  # to read a refused batch again
        self._known_headers: set[bytes] = set()
        # Every column of the schemas seen, by Delta name: a table column no schema seen has
        # is left out of inserts and reads as its default.
        self.inputs: dict[str, InputColumn] = {}
        self.nullable_tuple: bool | None = None  # asked of the server once

    @classmethod
    def create(
        cls, settings: ConsumerSettings, target: Target, schemas: Schemas, dead_letters: DeadLetters
    ) -> BatchWriter:
        """A writer for the settings' table, which it creates or checks from the topic's
        latest value schema."""
        client = connect(settings.clickhouse, compress=False)  # loopback: CPU matters more
        sink = Sink(client, target, settings.registry_url_for_clickhouse())
        topic = settings.consumer.topic
        order_by = schemas.order_by(topic, settings.consumer.primary_key)
        writer = cls(
            sink,
            schemas,
            dead_letters,
            order_by,
            settings.consumer.deduplication_window,
            settings.kafka.client_config(),
        )
        writer.prepare(schemas.latest_value(topic)[1])
        return writer

    def prepare(self, value_schema: dict[str, Any]) -> None:
        """Create the table from the schema, or check it and add new columns."""
        client, target = self.sink.client, self.sink.target
        with sorted_errors():
            if self.nullable_tuple is None:
                self.nullable_tuple = table.nullable_tuples(client)
            wanted = clickhouse_columns(value_schema, self.nullable_tuple)
            added = table.ensure(client, target, wanted, self.order_by, self.dedup_window)
        if added:
            log.info("added columns", extra={"table": target.name, "columns": added})
        for column in input_columns(value_schema, self.nullable_tuple):
            self.inputs[column.name] = column

    @property
    def columns(self) -> list[InputColumn]:
        return list(self.inputs.values())

    def write(self, batch: PartitionBatch) -> Written:
        values = batch.values()
        if not values:
            return Written(0, 0)
        self._evolve(values)
        try:
            self.sink.insert(values, self.columns, batch.dedup_token)
        except BadDataError as exc:
            log.warning(
                "insert refused, isolating bad messages",
                extra={
                    "partition": batch.partition,
                    "first": batch.first_offset,
                    "error": str(exc)[:300],
                },
            )
            return self._isolate(batch)
        return Written(len(values), 0)

    def _evolve(self, values: list[bytes]) -> None:
        """Step before an insert: a schema id not seen yet may bring new optional fields."""
        headers = set(map(_HEADER, values)) - self._known_headers
        for header in headers:
            found = schema_id(header)
            schema = None if found is None else self.schemas.by_id(found)
            if schema is None:
                continue  # not framed, or unknown to the registry: poison, isolated on insert
            self.prepare(schema)
            self._known_headers.add(header)

    def _isolate(self, batch: PartitionBatch) -> Written:
        messages = reread.messages(self.kafka_config, batch)
        good, poison = isolate.undecodable(messages, self.schemas)
        poison += isolate.insert_isolating(
            good,
            lambda part, token: self.sink.insert([m.value() for m in part], self.columns, token),
        )
        for message, why in poison:
            self.dead_letters.send(message, why)
        return Written(len(messages) - len(poison), len(poison))
