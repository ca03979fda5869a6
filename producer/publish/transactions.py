"""A chunk's slices as Kafka transactions, each with its progress record.

1. A chunk of one slice (any number of versions) is in one transaction, which may hold
   other tables' chunks too (producer/publish/transactor.py); its progress record names its last
   version.
2. A version too large for one transaction, cut in key-hash slices (producer/follow/plan.py), is one
   transaction per slice: each record names the last whole version before it and the slices
   published so far (schemas/progress.py `Part`); the last slice's record names the version
   whole. A restart publishes the slices after the last recorded one, cut the same way, so a
   read_committed reader sees each change once, the version in parts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from producer.encode.slices import Slice
from producer.publish.publish import Publisher
from schemas.progress import Part

BATCH_ROWS = 65_536


@dataclass
class Tally:
    """What a chunk's slices added up to: Spark time and encoded bytes."""

    read_s: float = 0.0
    bytes: int = 0

    def add(self, piece: Slice) -> None:
        self.read_s += piece.read_s
        self.bytes += piece.rows.nbytes


def publish_chunk(
    first: Slice,
    slices: Iterator[Slice],
    publisher: Publisher,
    whole: int | None,
    stop: Callable[[], bool],
    tally: Tally,
) -> int | None:
    """Rows of first's chunk published (its further slices pulled from slices), None when
    stopped; whole: the last version published whole before it."""
    chunk = first.chunk
    # A backlog's or a snapshot's chunk takes the process's other producer: its transactions
    # never hold up the chunks at the tables' heads (producer/publish/publish.py Transactions).
    behind = chunk.slices > 1 or chunk.snapshot or first.head > chunk.last
    if chunk.slices == 1:  # 1.
        return publisher.publish(_batches(first, slices, tally), chunk.last, stop, None, behind)
    rows, current = 0, first
    while True:  # 2.
        tally.add(current)
        whole_now = current.last_of_chunk
        part = Part(chunk.first, chunk.last, chunk.slices, current.index, chunk.snapshot)
        batches = current.rows.to_batches(max_chunksize=BATCH_ROWS)
        if whole_now:
            sent = publisher.publish(batches, chunk.last, stop, None, behind)
        else:
            sent = publisher.publish(batches, whole, stop, part, behind)
        if sent is None:
            return None
        rows += sent
        if whole_now:
            return rows
        following = next(slices, None)
        if following is None:
            raise InterruptedError("reader stopped in the middle of a chunk")
        current = following


def _batches(first: Slice, slices: Iterator[Slice], tally: Tally) -> Iterator[pa.RecordBatch]:
    """Every batch of first's chunk, pulling its further slices from slices."""
    current: Slice | None = first
    while current is not None:
        tally.add(current)
        yield from current.rows.to_batches(max_chunksize=BATCH_ROWS)
        if current.last_of_chunk:
            return
        current = next(slices, None)
    # The reader ended mid-chunk (stopping): raising makes the publisher abort the transaction.
    raise InterruptedError("reader stopped in the middle of a chunk")
