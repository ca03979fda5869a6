"""Changes → Confluent-framed Avro key and value, computed by Spark in the JVM (to_avro).

Only the value schema's columns are encoded, so a column the policy leaves out
(schemas/column_policy.py) is never read into a value; a hashed one is replaced by Spark's
`sha2(col, 256)` of its bytes (an integer: of its decimal text) in the same tasks.

Python never touches a row here: the driver receives Arrow batches of ready-made bytes,
cut into key-hash slices and checked for NULL keys next door (producer/encode/slices.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from producer.encode.evolution import bare
from schemas import changes
from schemas.avro_names import delta_name, renamed
from services.spark_session import column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# Columns of an encoded frame, as they arrive in the driver.
KEY, VALUE, ORDER, KEY_IS_NULL, IS_DELETE = "key", "value", "_order", "_key_is_null", "_is_delete"
# An update's preimage encoded as a delete, which the driver keeps only if no row of its key
# survives its commit: the update rewrote the key (producer/encode/slices.py).
PREIMAGE = "_preimage"
# xxhash64 of the key columns: two rows of one key left by one commit are found by sorting
# integers, not key bytes (producer/encode/slices.py).
KEY_HASH = "_key_hash"


# A row's key prefix, value prefix and generation, as columns (Encoding.encode_framed).
Framing = tuple["Column", "Column", "Column"]


@dataclass(frozen=True)
class WireSchema:
    """An Avro schema and the registry id that frames messages written with it."""

    schema: dict[str, Any]
    schema_id: int

    @property
    def prefix(self) -> bytes:
        # Confluent wire format: magic byte 0, then the schema id as 4 big-endian bytes.
        return b"\x00" + self.schema_id.to_bytes(4, "big")


def describe_key(raw: bytes, wire: WireSchema | None) -> str:
    """A framed Avro key as `col=value, ...` with Delta names, for error messages."""
    import io

    import fastavro

    if wire is None or not raw.startswith(wire.prefix):
        return raw.hex()
    parsed = fastavro.parse_schema(wire.schema)
    record = fastavro.schemaless_reader(io.BytesIO(raw[len(wire.prefix) :]), parsed, None)
    names = [delta_name(field) for field in wire.schema["fields"]]
    values = record.values() if isinstance(record, dict) else [record]
    return ", ".join(f"{name}={value!r}" for name, value in zip(names, values, strict=False))


@dataclass(frozen=True)
class Encoding:
    """What turns changes into key and value bytes: the topic's wire schemas, its key
    columns, whether update preimages are published, the columns published hashed, and
    the generation that values with a `_generation` field carry (schemas/changes.py)."""

    key: WireSchema
    value: WireSchema
    primary_key: Sequence[str]
    include_preimage: bool
    hashed: frozenset[str] = field(default_factory=frozenset)
    generation: int = 0
    # The select's columns per schema of the frames encoded: building them costs some
    # hundred py4j calls, which a table's every small chunk would pay again.
    _selects: dict[str, list[Column]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def encode(self, frame: DataFrame) -> DataFrame:
        """Key/value bytes of every change in frame, with what the driver needs to order them.

        frame has the table's columns plus _change_type, _commit_version, _commit_timestamp.
        An update's preimage is published as it is with include_preimage; otherwise as a
        `delete` of its key, which the driver drops where a row of that key survives the
        commit (the rewritten-key rule, schemas/changes.py).
        """
        shape = frame.schema.json()
        if shape not in self._selects:
            self._selects[shape] = self._select(frame)
        return frame.select(*self._selects[shape])

    def encode_framed(self, frame: DataFrame, framing: Framing, *more: Column) -> DataFrame:
        """encode(frame), each row framed and given its generation as framing says (rows of
        several tables whose encodings share_key() alike: producer/read/shared.py), with
        the columns of `more` after the encoded ones."""
        return frame.select(*self._select(frame, framing), *more)

    def share_key(self) -> str:
        """What encodes a change's bytes, but for the schemas' ids and record names and the
        generation: equal for two tables whose rows one select encodes alike."""
        names = [delta_name(field) for field in self.value.schema["fields"]]
        key, value = bare(self.key.schema), bare(self.value.schema)
        hashed, preimage = sorted(self.hashed), self.include_preimage
        return json.dumps([key, value, names, list(self.primary_key), preimage, hashed])

    def _select(self, frame: DataFrame, framing: Framing | None = None) -> list[Column]:
        from pyspark.sql.functions import col, lit, when, xxhash64

        sources = hashed_columns(frame, self.hashed)
        value_columns = [delta_name(field) for field in self.value.schema["fields"]]
        key_is_null = _any_null(self.primary_key)
        change_type = col(changes.CHANGE_TYPE)
        preimage = change_type == changes.UPDATE_PREIMAGE
        if not self.include_preimage:
            change_type = when(preimage, lit(changes.DELETE)).otherwise(change_type)
        key_prefix, value_prefix = (
            lit(bytearray(self.key.prefix)),
            lit(bytearray(self.value.prefix)),
        )
        generation = lit(self.generation).cast("long")
        if framing is not None:
            key_prefix, value_prefix, generation = framing
        filled = {**sources, changes.CHANGE_TYPE: change_type, changes.GENERATION: generation}
        value = _record(frame, value_columns, filled)
        # A NULL key cannot be encoded; it is left NULL and reported by the driver with its
        # version (producer/encode/slices.py).
        key_bytes = when(
            ~key_is_null, _framed(_record(frame, self.primary_key), self.key, key_prefix)
        )
        value_bytes = when(~key_is_null, _framed(value, self.value, value_prefix))
        return [
            key_bytes.alias(KEY),
            value_bytes.alias(VALUE),
            _order().alias(ORDER),
            key_is_null.alias(KEY_IS_NULL),
            (preimage | (change_type == changes.DELETE)).alias(IS_DELETE),
            (preimage & lit(not self.include_preimage)).alias(PREIMAGE),
            xxhash64(*[column(c) for c in self.primary_key]).alias(KEY_HASH),
        ]


def snapshot_changes(frame: DataFrame, version: int, committed_at: datetime) -> DataFrame:
    """A table snapshot dressed as changes: _change_type 'snapshot' at the given version."""
    from pyspark.sql.functions import lit

    return (
        frame.withColumn(changes.CHANGE_TYPE, lit(changes.SNAPSHOT))
        .withColumn(changes.COMMIT_VERSION, lit(version).cast("long"))
        .withColumn(changes.COMMIT_TIMESTAMP, lit(committed_at).cast("timestamp"))
    )


def hashed_columns(frame: DataFrame, names: frozenset[str]) -> dict[str, Column]:
    """Each of the named columns frame has, as the lowercase hex SHA-256 of its value
    (binary: its bytes; string: UTF-8; integers: decimal text), NULL kept NULL."""
    from pyspark.sql.functions import sha2
    from pyspark.sql.types import BinaryType

    def sha256(name: str, binary: bool) -> Column:
        return sha2(column(name) if binary else column(name).cast("string"), 256)

    present = [f for f in frame.schema.fields if f.name in names] if names else []
    return {f.name: sha256(f.name, isinstance(f.dataType, BinaryType)) for f in present}


def _record(
    frame: DataFrame, names: Sequence[str], replaced: dict[str, Column] | None = None
) -> Column:
    """The columns as one struct whose fields carry their Avro names (schemas.avro_names):
    a cast renames a struct's fields by position, and to_avro matches them by name. A
    column named in `replaced` takes that expression's value (of the same type, or of the
    schema's own type for one the frame lacks: `_generation`)."""
    from pyspark.sql.functions import struct
    from pyspark.sql.types import StructType

    given = replaced or {}
    fields = [given[n].alias(n) if n in given else column(n) for n in names]
    delta_type = frame.select(*fields).schema.jsonValue()
    avro_named = renamed(delta_type)
    record = struct(*fields)
    return record if avro_named == delta_type else record.cast(StructType.fromJson(avro_named))


def _framed(record: Column, wire: WireSchema, prefix: Column) -> Column:
    from pyspark.sql.avro.functions import to_avro
    from pyspark.sql.functions import concat

    return concat(prefix, to_avro(record, json.dumps(wire.schema)))


def _order() -> Column:
    """The contract's _version: commit order, and a commit's deletes before its survivors."""
    from pyspark.sql.functions import col

    survives = ~col(changes.CHANGE_TYPE).isin(changes.DELETE, changes.UPDATE_PREIMAGE)
    return col(changes.COMMIT_VERSION) * 2 + survives.cast("long")


def _any_null(columns: Sequence[str]) -> Column:
    condition = column(columns[0]).isNull()
    for name in columns[1:]:
        condition = condition | column(name).isNull()
    return condition
