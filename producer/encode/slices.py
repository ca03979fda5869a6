"""A chunk's changes as the driver receives them: encoded (producer/encode/encode.py), cut into
key-hash slices when one read would hold too many, each checked for NULL keys and for keys
that are not unique (two rows of one key left by one commit, or in one snapshot), and sorted
by the contract's _version (_order).

A key always hashes to the same slice (xxhash64 of its columns, modulo the slice count), so
its changes keep their order however a chunk is cut. All of it is columnar: Spark filters
and encodes, Arrow finds a NULL key and sorts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from producer.encode.encode import (
    IS_DELETE,
    KEY,
    KEY_HASH,
    KEY_IS_NULL,
    ORDER,
    PREIMAGE,
    VALUE,
    Encoding,
    describe_key,
)
from producer.errors import DuplicateKeyError, NullKeyError
from producer.follow.course import SAMPLE_ROWS
from producer.follow.plan import Chunk
from services.spark_session import column

# An encoded frame's columns as Spark's toArrow hands them: what a read of no change holds.
ENCODED = pa.schema(
    [
        *((name, pa.binary()) for name in (KEY, VALUE)),
        (ORDER, pa.int64()),
        *((name, pa.bool_()) for name in (KEY_IS_NULL, IS_DELETE, PREIMAGE)),
        (KEY_HASH, pa.int64()),
    ]
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

# An odd constant that spreads a version over the bits of a key hash (the golden ratio's).
_MIX = np.int64(-7046029254386353131)


@dataclass(frozen=True)
class Slice:
    chunk: Chunk
    index: int  # 0 .. chunk.slices - 1
    rows: pa.Table  # key, value, _order, ... sorted by _order
    read_s: float  # Spark time spent on it: schema lookups, planning, scan, encode
    head: int  # the table's latest version when its chunk was planned

    @property
    def last_of_chunk(self) -> bool:
        return self.index == self.chunk.slices - 1


def encoded_slices(
    frame: DataFrame,
    slices: int,
    encoding: Encoding,
    table: str,
    start: int = 0,
    collect: Callable[[DataFrame], pa.Table] = lambda encoded: encoded.toArrow(),
) -> Iterator[pa.Table]:
    """frame's changes encoded, in `slices` key-hash slices from slice `start` on, each
    sorted by _order; a NULL key raises NullKeyError naming its version. collect: what
    runs an encoded slice's Spark job (a job of its own, or a share of a cycle's)."""
    for index in range(start, slices):
        part = (
            frame if slices == 1 else frame.where(_key_hash(encoding.primary_key, slices) == index)
        )
        yield finished(collect(encoding.encode(part)), encoding, table)


def finished(rows: pa.Table, encoding: Encoding, table: str) -> pa.Table:
    """A slice's encoded rows checked for NULL and repeated keys, without the preimages an
    update rewrote, sorted by _order."""
    check_keys(rows, table, encoding.primary_key)
    kept = rewritten_keys(rows)
    check_unique(kept, table, encoding)
    return kept.sort_by(ORDER)


def sample(frame: DataFrame, encoding: Encoding) -> pa.Table:
    """Up to SAMPLE_ROWS of frame's changes, encoded: how wide a change is."""
    return encoding.encode(frame).limit(SAMPLE_ROWS).toArrow()


def check_keys(rows: pa.Table, table: str, primary_key: Sequence[str]) -> None:
    """NullKeyError, with the version of the first change whose key has a NULL column."""
    nulls = rows.column(KEY_IS_NULL)
    if len(rows) and pc.any(nulls).as_py():
        first = pc.index(nulls, True).as_py()
        version = rows.column(ORDER)[first].as_py() // 2
        raise NullKeyError(table, version, list(primary_key))


def check_unique(rows: pa.Table, table: str, encoding: Encoding) -> None:
    """DuplicateKeyError when two rows of one key survive one commit: the table holds the
    key twice at that version. A commit's net changes hold one surviving row per row of
    the table, and a key's changes are all in one slice, so the check is local: the
    surviving rows' (commit, key hash) mixed into one integer and sorted (numpy, about 20 ms
    a million rows), then any equal neighbours compared by their key bytes."""
    survivor = ~rows.column(IS_DELETE).to_numpy()
    mixed = rows.column(KEY_HASH).to_numpy() ^ (rows.column(ORDER).to_numpy() * _MIX)
    found = np.sort(mixed[survivor])
    if not (found[1:] == found[:-1]).any():
        return
    repeated = found[1:][found[1:] == found[:-1]]
    near = np.flatnonzero(survivor & np.isin(mixed, repeated))  # a few rows: Python is fine
    seen: dict[tuple[int, bytes], int] = {}
    for at in near.tolist():
        key, order = rows.column(KEY)[at].as_py(), rows.column(ORDER)[at].as_py()
        if (order, key) in seen:
            described = describe_key(key, encoding.key)
            raise DuplicateKeyError(table, order // 2, list(encoding.primary_key), described)
        seen[(order, key)] = at


def rewritten_keys(rows: pa.Table) -> pa.Table:
    """rows without the preimages (encoded as deletes) whose key has a surviving row (an
    insert or postimage) in the same commit: what is left of them deletes the keys that
    an UPDATE or MERGE rewrote. A key's changes are all in one slice, so the check is local;
    it runs in Arrow, matching (commit version, key bytes)."""
    preimage = rows.column(PREIMAGE)
    if not len(rows) or not pc.any(preimage).as_py():
        return rows
    commit = pc.cast(pc.cast(pc.divide(rows.column(ORDER), 2), pa.string()), pa.binary())
    # Key bytes start with the wire format's zero byte, which no version's digits hold.
    change = pc.binary_join_element_wise(commit, rows.column(KEY), b"")
    survivor = pc.invert(pc.or_(preimage, rows.column(IS_DELETE)))
    kept = pc.is_in(change, value_set=pc.filter(change, survivor))
    return rows.filter(pc.invert(pc.and_(preimage, kept)))


def _key_hash(primary_key: Sequence[str], slices: int) -> Column:
    from pyspark.sql.functions import lit, pmod, xxhash64

    return pmod(xxhash64(*[column(c) for c in primary_key]), lit(slices))
