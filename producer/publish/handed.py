"""A chunk as one table hands it to the process's Kafka transaction
(producer/publish/transactor.py): its encoded rows, its progress record, and the count of rows
sent, once the transaction that holds it commits."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import pyarrow as pa


@dataclass(eq=False)
class Chunk:
    """One table's chunk (or slice of one), as handed to a transaction."""

    topic: str
    batches: list[pa.RecordBatch]
    progress: tuple[str, bytes, bytes]  # the progress record: topic, value, key
    tombstones: bool = False
    rows: Future[int] = field(default_factory=Future)
