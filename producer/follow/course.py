"""What to read next while following a table: plain numbers in, chunks out.

No Spark and no Kafka here, so every decision of the follow loop (producer/lake/follow.py) can be
tested with numbers alone:
- the loop: poll the head, read the span up to it, wait while there is nothing new (spans);
- the span to read: from the next unpublished version to the table's head, or only to
  --until-version; none while the table has nothing new, and none ever again once
  --until-version is passed;
- the chunks of a span (producer/follow/plan.py), from the history's row estimates and the rows a
  chunk may hold, which the learned row width sets; planned again as soon as changes turn
  out much wider than the chunks were planned for;
- the first chunk of a start: small (FIRST_CHUNK_ROWS, or the first version whole), so
  rows flow while the JVM warms; while the width is unknown, no larger than a sample
  (SAMPLE_ROWS), so that it teaches the width in the cycle's job, with no sample's job;
- the version whose changes are sampled to learn the width before the first chunk: one
  that holds more changes than a sample; or, for a first chunk read in a job of its own, the
  bytes each of its changes may take instead (first_bound), which that job enforces;
- the slices of a chunk the history gave no row count for, once its rows are counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from producer.follow.plan import Chunk, plan, rows_per_chunk

Estimates = Mapping[int, int | None]  # change rows per version, None: the history does not say
# The first chunk of a start holds up to this many changes, or its first version whole.
FIRST_CHUNK_ROWS = 50_000
SAMPLE_ROWS = 1_000  # changes encoded to learn their width before the first chunk
WIDE_ROW_BYTES = 64 * 2**10  # a very wide change, for the start read unsampled
# What an encoded change takes in the driver beside its key and value bytes: their offsets,
# its order and key hash, its flags (producer/encode/encode.py).
ROW_OVERHEAD = 32
# A first chunk's bound on a change's key and value bytes below this is too tight to try:
# most tables' changes are wider and would fail the read. The width is sampled instead.
MIN_ROW_BOUND = 128


@dataclass(frozen=True)
class Span:
    """Versions first..last to publish, planned when the table's latest version was head."""

    first: int
    last: int
    head: int


class RowWidth:
    """The encoded size of one change in the driver, as last seen, and the rows a chunk may
    hold because of it. The one place it is learned: from a sample before the first chunk,
    then from every slice read."""

    def __init__(self, max_rows: int, max_bytes: int) -> None:
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self._bytes: float | None = None  # None: no change seen yet

    @property
    def known(self) -> bool:
        return self._bytes is not None

    def learn(self, nbytes: int, rows: int) -> None:
        """rows changes took nbytes; nothing is learned from none."""
        if rows:
            self._bytes = nbytes / rows

    def nbytes(self, rows: int) -> int:
        """What rows changes take in the driver, as far as known (0 while unknown)."""
        return round(rows * (self._bytes or 0))

    def rows_per_chunk(self) -> int:
        """The row bound of a chunk: max_rows, or fewer when the width passes max_bytes."""
        return rows_per_chunk(self.max_rows, self.max_bytes, self._bytes)


class Course:
    """Where following a table stands (the next version to read) and what to read next."""

    def __init__(self, start: int, until: int | None, max_versions: int, width: RowWidth) -> None:
        self.next_version = start
        self.until, self.max_versions, self.width = until, max_versions, width
        self.started = False  # a chunk was planned since this start

    @property
    def finished(self) -> bool:
        """--until-version is published: nothing more is read."""
        return self.until is not None and self.next_version > self.until

    def span(self, head: int) -> Span | None:
        """The versions to read now that the table's latest version is head; None when there
        is nothing new (or --until-version is passed)."""
        last = head if self.until is None else min(head, self.until)
        if self.next_version > last:
            return None
        return Span(self.next_version, last, head)

    def sample_version(self, span: Span, estimates: Estimates) -> int | None:
        """The first version of span known to hold changes, to learn the row width from
        before planning; None when it is learned already, when no version says it has
        changes (a version without an estimate gets a chunk of its own, sized once counted),
        when every version's estimate says the span holds no more changes than a sample
        (read whole, it takes no more memory than the sample would, and one Spark job
        fewer), or, at a start, when that version holds no more changes than a sample: the
        first chunk is then no larger than a sample (chunks) and teaches the width itself
        (`_unsampled`).
        Such a read may share its cycle's job (producer/read/cycle.py) with others of unknown
        width: those of the tables starting with it, as their samples shared the driver."""
        if self.width.known:
            return None
        counts = [estimates.get(v) for v in range(span.first, span.last + 1)]
        if all(n is not None for n in counts) and sum(n or 0 for n in counts) <= SAMPLE_ROWS:
            return None
        first = next((v for v in range(span.first, span.last + 1) if estimates.get(v)), None)
        if first is None or (not self.started and self._unsampled(estimates.get(first) or 0)):
            return None
        return first

    def _unsampled(self, rows: int) -> bool:
        """Whether a start's first chunk of rows changes, of a width unknown, may be read
        without a sample: no more than a sample, and a chunk's bytes would hold a sample's
        worth of very wide changes (a small max_bytes_per_chunk keeps the sample)."""
        return rows <= SAMPLE_ROWS and self.width.max_bytes >= SAMPLE_ROWS * WIDE_ROW_BYTES

    def first_bound(self, span: Span, estimates: Estimates) -> int | None:
        """The key and value bytes each change of a start's first chunk may take for the
        chunk, of a width unknown, to stay within max_bytes: for a first chunk read in a job
        of its own, which fails on a wider change (producer/read/width.py), instead of a
        sample before it. None where the width is known, the chunk is not one counted read,
        or the bound would be below MIN_ROW_BOUND: the width is sampled then."""
        if self.width.known or self.started:
            return None
        chunk = self._first(span, estimates)
        rows = sum(estimates.get(v) or 0 for v in range(chunk.first, chunk.last + 1))
        if chunk.slices > 1 or not chunk.sized or not rows:
            return None
        bound = self.width.max_bytes // rows - ROW_OVERHEAD
        return bound if bound >= MIN_ROW_BOUND else None

    def restart(self) -> None:
        """Plan the first chunk of the start again: the one planned was not read."""
        self.started = False

    def _first(self, span: Span, estimates: Estimates) -> Chunk:
        """A start's first chunk: small, or the first version with changes whole."""
        small = FIRST_CHUNK_ROWS if self.width.known else SAMPLE_ROWS
        counts = (estimates.get(v) for v in range(span.first, span.last + 1))
        first_rows = max(small, next((n for n in counts if n), 0))
        bound = min(self.width.rows_per_chunk(), first_rows)
        return next(plan(self.next_version, span.last, estimates, bound, self.max_versions))

    def chunks(self, span: Span, estimates: Estimates) -> Iterator[Chunk]:
        """span's chunks in order, the first of a start small (no larger than a sample while
        the width is unknown); resuming after one marks it read. Ends early, for the span to
        be planned again, when the row bound fell below half of what the plan assumed:
        changes turned out much wider than planned for."""
        if not self.started:
            self.started = True
            chunk = self._first(span, estimates)
            yield chunk
            self.next_version = chunk.last + 1
            if self.next_version > span.last:
                return
        max_rows = self.width.rows_per_chunk()
        for chunk in plan(self.next_version, span.last, estimates, max_rows, self.max_versions):
            yield chunk
            self.next_version = chunk.last + 1
            if self.width.rows_per_chunk() < max_rows // 2:
                return

    def sized(self, chunk: Chunk, rows: int) -> Chunk:
        """chunk, counted to hold rows changes, in as many slices as the row bound needs."""
        if chunk.sized:
            return chunk
        slices = max(1, math.ceil(rows / self.width.rows_per_chunk()))
        return replace(chunk, slices=slices, sized=True)


def spans(course: Course, head: Callable[[], int], wait: Callable[[], bool]) -> Iterator[Span]:
    """The spans to read as the table's head moves, each read (its chunks consumed) before
    the head is polled again; wait() while there is nothing new, True meaning stop. Ends once
    --until-version is read."""
    while not course.finished:
        span = course.span(head())
        if span is not None:
            yield span
        elif wait():
            return
