"""Cutting a version range into chunks: one Kafka transaction each, bounded in rows and bytes.

Pure arithmetic over row estimates from the Delta history and the encoded size of a row, so
a backlog of any length or a single huge commit is published in pieces whose size does not
depend on the backlog.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    first: int  # first Delta version, inclusive
    last: int  # last Delta version, inclusive
    slices: int = 1  # >1 only for a single version too big for one read
    sized: bool = True  # False: one version the history gave no row count for
    snapshot: bool = False  # the table's state at `first`, not its changes

    def __str__(self) -> str:
        versions = f"{self.first}" if self.first == self.last else f"{self.first}-{self.last}"
        return versions + (f" in {self.slices} slices" if self.slices > 1 else "")


def plan(
    first: int,
    last: int,
    estimates: Mapping[int, int | None],
    max_rows: int,
    max_versions: int,
) -> Iterator[Chunk]:
    """Chunks covering first..last in order.

    A version without an estimate gets a chunk of its own, marked not sized: the reader
    counts its rows; one whose estimate exceeds max_rows is read in
    ceil(estimate / max_rows) slices.
    """
    start, rows = first, 0
    for version in range(first, last + 1):
        estimate = estimates.get(version)
        if estimate is None or estimate > max_rows:
            if version > start:
                yield Chunk(start, version - 1)
            yield Chunk(version, version, _slices(estimate, max_rows), estimate is not None)
            start, rows = version + 1, 0
            continue
        if version > start and (rows + estimate > max_rows or version - start >= max_versions):
            yield Chunk(start, version - 1)
            start, rows = version, 0
        rows += estimate
    if start <= last:
        yield Chunk(start, last)


def rows_per_chunk(max_rows: int, max_bytes: int, row_bytes: float | None) -> int:
    """The row bound of a chunk: max_rows, or fewer when rows of row_bytes would pass max_bytes.

    row_bytes is the encoded size of one change as it sits in the driver (None: not known).
    """
    if not row_bytes:
        return max_rows
    return max(1, min(max_rows, int(max_bytes / row_bytes)))


def _slices(estimate: int | None, max_rows: int) -> int:
    return 1 if estimate is None else max(1, math.ceil(estimate / max_rows))


# Delta history operationMetrics that count change rows (Spark's and delta-rs' names).
_ROWS_ONCE = (
    "numOutputRows",
    "numTargetRowsInserted",
    "numTargetRowsDeleted",
    "numDeletedRows",
    "num_added_rows",
    "num_deleted_rows",
    "num_target_rows_inserted",
    "num_target_rows_deleted",
)
# Updates appear twice in the feed: pre- and post-image.
_ROWS_TWICE = (
    "numTargetRowsUpdated",
    "numUpdatedRows",
    "num_target_rows_updated",
    "num_updated_rows",
)


def estimate_rows(operation_metrics: Mapping[str, str] | None) -> int | None:
    """Upper bound of the change rows of one commit, or None when its metrics say nothing."""
    if not operation_metrics:
        return None
    known = [k for k in (*_ROWS_ONCE, *_ROWS_TWICE) if k in operation_metrics]
    if not known:
        return None
    once = sum(int(operation_metrics.get(k, 0)) for k in _ROWS_ONCE)
    return once + 2 * sum(int(operation_metrics.get(k, 0)) for k in _ROWS_TWICE)
