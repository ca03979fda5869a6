"""The table's schema over a range of versions, checked and registered for the topic
(producer/encode/registry.py) before anything of the range is read.

Equal schemas at a range's ends mean no change in between: Delta refuses a Change Data
Feed read across a metadata change its read schema cannot represent, so a column added and
then dropped inside the range still stops the read. The last schema looked up is kept, so a
table whose schema does not change costs one lookup per poll.

What is registered, and compared for evolution, is the schema as published: the column
policy's excluded columns left out and its hashed ones as strings (schemas/column_policy.py).
So a new column is followed as before, and a new excluded one changes nothing published.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from producer.encode.encode import Encoding, WireSchema
from producer.encode.registry import TopicSchemas
from producer.errors import SchemaChangeError
from producer.follow.plan import Chunk
from schemas.avro import key_schema, value_schema
from schemas.column_policy import ColumnPolicy

TableSchema = dict[str, Any]  # Spark's StructType as JSON


class RangeSchemas:
    """The table's schemas through `lookup` (version → schema), and the topic's wire schemas
    they register: the Encoding of what is read."""

    def __init__(
        self,
        lookup: Callable[[int], TableSchema],
        topic: TopicSchemas,
        primary_key: Sequence[str],
        include_preimage: bool,
        policy: ColumnPolicy | None = None,
    ) -> None:
        self._lookup, self.topic = lookup, topic
        self.primary_key, self.include_preimage = primary_key, include_preimage
        self.policy = policy or ColumnPolicy()
        self._known: tuple[int, TableSchema] | None = None  # the last schema looked up
        self._encoding: Encoding | None = None
        # Whether no commit first..last carries metaData (DeltaSource.settled): the schema
        # known before first then holds, without a lookup.
        self.settled: Callable[[int, int], bool] = lambda first, last: False

    def at(self, version: int) -> TableSchema:
        schema = self._lookup(version)
        self._known = (version, schema)
        return schema

    def check_policy(self, version: int) -> None:
        """The table at version (its latest, at start-up) has every column the policy names,
        and those it hashes can be: ColumnPolicyError otherwise."""
        if self.policy:
            self.policy.check(self._lookup(version), self.topic.table, version)

    def of_range(self, first: int, last: int) -> TableSchema | None:
        """The schema of every version first..last if they share one, else None. The range
        that follows the last one looked up starts from that one's end: equal ends of
        first - 1..last say the same of first..last. Where no commit after first changes
        the table, first's schema is last's, and is not looked up."""
        if self._known and self._known[0] < first and self.settled(self._known[0] + 1, last):
            self._known = (last, self._known[1])
            return self._known[1]
        before = self._known[1] if self._known and self._known[0] == first - 1 else None
        end = self.at(last)
        if first == last or self.settled(first + 1, last):  # no change after first's
            return end
        start = before if before is not None else self._lookup(first)
        return end if start == end else None

    def parts(self, first: int, last: int) -> list[tuple[int, int]]:
        """first..last cut where the schema changes, each part of one schema (as far as
        equal ends tell): Delta reads no Change Data Feed across a type widening, and a
        range is read in the schema of its last version. Found by bisection."""
        schemas: dict[int, TableSchema] = {}

        def at(version: int) -> TableSchema:
            if version not in schemas:
                schemas[version] = self._lookup(version)
            return schemas[version]

        def changes(low: int, high: int) -> list[int]:  # versions in (low, high] that change
            if at(low) == at(high):
                return []
            if high == low + 1:
                return [high]
            middle = (low + high) // 2
            return changes(low, middle) + changes(middle, high)

        starts = [first, *changes(first, last)]
        return [(a, b - 1) for a, b in zip(starts, [*starts[1:], last + 1], strict=True)]

    def for_chunk(self, chunk: Chunk, range_schema: TableSchema | None) -> TableSchema:
        """The schema chunk is read with, registered; a range whose schema changed has each
        chunk's ends checked (and registered) instead."""
        schema = range_schema
        if schema is None:
            if chunk.first != chunk.last:
                self.use(chunk.first, self.at(chunk.first))
            schema = self.at(chunk.last)
        self.use(chunk.last, schema)
        return schema

    def use(self, version: int, table_schema: TableSchema) -> None:
        """Register the topic's key and value schemas for table_schema (as of version)."""
        key, value = self._avro(table_schema)
        self.topic.use(key, value, version)

    def check_columns(self, read: Sequence[str], schema: TableSchema, chunk: Chunk) -> None:
        """The read has every column of the schema. Equal schemas at a range's ends hide a
        column renamed and renamed back in between, and a chunk inside reads the other name.
        (A read may have more columns: Delta reads with a later schema's added ones.)"""
        columns = set(read)
        missing = [f["name"] for f in schema["fields"] if f["name"] not in columns]
        if missing:
            detail = f"versions {chunk} were read without the topic's columns {missing}"
            raise SchemaChangeError(self.topic.table, chunk.last, detail)

    def encoding(self) -> Encoding:
        """How changes are encoded with the wire schemas registered last."""
        key, value = self.topic.key, self.topic.value
        if key is None or value is None:
            raise RuntimeError("schemas are registered before any read")
        known = self._encoding
        if known is None or (known.key, known.value) != (key, value):
            hashed = self.policy.hashed
            preimage, generation = self.include_preimage, self.topic.generation
            known = Encoding(key, value, self.primary_key, preimage, hashed, generation)
            self._encoding = known  # the same while the wire schemas are
        return known

    def sizing(self, table_schema: TableSchema) -> Encoding:
        """An encoding to measure changes of table_schema with: registry ids do not change
        the size, so none need be registered."""
        key, value = self._avro(table_schema)
        wire = WireSchema(key, 0), WireSchema(value, 0)
        return Encoding(*wire, self.primary_key, self.include_preimage, self.policy.hashed)

    def _avro(self, table_schema: TableSchema) -> tuple[dict[str, Any], dict[str, Any]]:
        """The key and value schemas of table_schema as published."""
        name, pk = self.topic.topic, list(self.primary_key)
        published = self.policy.published(table_schema)
        field = self.topic.carries_generation()
        return key_schema(published, pk, name), value_schema(published, name, pk, field)
