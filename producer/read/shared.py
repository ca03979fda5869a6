"""Reads of several tables of one shape in one Parquet scan, encoded by one select.

A cycle (producer/read/cycle.py) holds reads of many tables at their heads. Two reads
whose files were planned as one scan each (producer/read/file_read.py) share one scan
when their tables read alike (the same columns, partition columns and read schema) and
encode alike: the same Avro bytes for the same row (Encoding.share_key: the schemas bare of
their names, the key, the hashed columns, the preimages). Each row is tagged with its
file, as a span's rows are, and its file says which read it belongs to: its place in the
cycle (PLACE), its schemas' ids (the Confluent prefix) and its generation. What a read
costs in the cycle's job is then its files' share of one scan, not a scan of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from producer.encode.encode import Encoding
from producer.read.file_read import FilePlan, scan
from producer.read.file_tags import Tag, pick

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PLACE = "_cycle_place"  # the column that tags each table's rows within a cycle
_INDEX = "_shared_read"  # each row's read, by its index among the scan's reads


@dataclass(frozen=True)
class Sharing:
    """A read's files and its encoding, which a cycle may read with others'."""

    plan: FilePlan
    encoding: Encoding

    def key(self) -> str | None:
        """Reads of equal keys share a scan; None: this one reads alone (two scans)."""
        if len(self.plan.scans) != 1:
            return None
        shape = self.plan.shape
        table = [shape.read_schema, list(shape.columns), sorted(shape.partitions.items())]
        return json.dumps([table, self.encoding.share_key()])


def shared(spark: SparkSession, reads: Sequence[tuple[str, Sharing]]) -> DataFrame | None:
    """The encoded rows of reads (place, sharing), of one key, from one scan, with PLACE;
    None where two of their files have one name (a scan tells files apart by name)."""
    from pyspark.sql import DataFrame
    from pyspark.sql.functions import expr

    tags: dict[str, Tag] = {}
    places: list[int] = []  # each file's read, by its index in reads
    for index, (_, sharing) in enumerate(reads):
        for name, tag in sharing.plan.scans[0].items():
            if name in tags:
                return None
            tags[name] = tag
            places.append(index)
    read = f"{pick([str(i) for i in places])} AS `{_INDEX}`"
    place = f"{pick([_text(reads[i][0]) for i in places])} AS `{PLACE}`"
    shape = reads[0][1].plan.shape
    frame = DataFrame(scan(spark, shape, tags, read, place), spark)
    encodings = [sharing.encoding for _, sharing in reads]
    framing = (
        expr(_by_read([_binary(e.key.prefix) for e in encodings])),
        expr(_by_read([_binary(e.value.prefix) for e in encodings])),
        expr(_by_read([f"CAST({int(e.generation)} AS BIGINT)" for e in encodings])),
    )
    return encodings[0].encode_framed(frame, framing, frame[PLACE])


def _by_read(values: list[str]) -> str:
    """The value of each row's read."""
    if len(set(values)) == 1:
        return values[0]
    return f"element_at(array({', '.join(values)}), `{_INDEX}` + 1)"


def _binary(raw: bytes) -> str:
    return f"X'{raw.hex()}'"


def _text(place: str) -> str:
    return f"CAST(X'{place.encode().hex()}' AS STRING)"
