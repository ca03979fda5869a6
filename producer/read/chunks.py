"""Plan → read → encode → slice, for one span of versions, one snapshot or the rest of a
version published in parts: the steps of following a table (producer/lake/follow.py) once it
knows what to read.

A span at the table's head (HEAD_ROWS changes at most) is read in the process's cycle, with
the other tables' reads in one Spark job (producer/read/cycle.py); a longer one (a backlog),
a snapshot and a version cut in slices are read in jobs of their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from producer import metrics
from producer.encode.encode import Encoding, snapshot_changes
from producer.encode.slices import ENCODED, Slice, encoded_slices, finished
from producer.encode.table_schemas import RangeSchemas, TableSchema
from producer.errors import WiderThanBoundError
from producer.follow.course import Course, Estimates, Span
from producer.follow.plan import Chunk
from producer.pools import FOLLOW, HISTORY, in_pool
from producer.read.cycle import Cycle
from producer.read.file_read import FilePlan
from producer.read.shared import Sharing
from producer.read.source import DeltaSource
from producer.read.width import Collect, Width, bounded
from producer.spark_errors import reading
from producer.steps import Waterfall
from schemas.progress import Part

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


# A span of at most this many changes is at the head: read in the cycle. A longer one is a
# backlog: read in chunks of its own, in HISTORY, so it holds no other table up.
HEAD_ROWS = 50_000


class Chunks:
    """Plan → read → encode → slice, for one span of versions or one snapshot."""

    def __init__(
        self,
        source: DeltaSource,
        ranges: RangeSchemas,
        course: Course,
        steps: Waterfall,
        cycle: Cycle | None,
        handed: Callable[[], None] = lambda: None,
    ) -> None:
        self.source, self.ranges, self.course = source, ranges, course
        self.table, self.steps, self.cycle = source.table, steps, cycle
        self.handed = handed  # called when a read waits in the cycle for its job
        self.estimates: Estimates = {}  # the span's being read
        self.path: str | None = None  # "head" or "backlog": how the span is read
        self.width = Width(source, ranges, course)
        self.bound: int | None = None  # what a change may take in the next read alone (Width)

    def span(self, span: Span, known: TableSchema | None = None) -> Iterator[Slice]:
        """span's slices; known: its schema, when it is one part of a span that changes."""
        began, step = time.monotonic(), self.steps.step
        with step("row_estimates"):
            self.estimates = estimates = self.source.row_estimates(span.first, span.last, span.head)
        self._take_path(span, sum(n or 0 for n in estimates.values()))
        with step("schemas"):
            schema = known or self.ranges.of_range(span.first, span.last)  # None: it changes
        if schema is None:  # each part of one schema read alone
            for first, last in self.ranges.parts(span.first, span.last):
                yield from self.span(Span(first, last, span.head), self.ranges.at(last))
            return
        with step("row_width"):  # or the first chunk's bound, where it is read alone
            bound = self.width.before(span, estimates, schema, alone=self.path == "backlog")
        try:
            yield from self._planned(span, schema, time.monotonic() - began, bound)
        except WiderThanBoundError:  # the first chunk's read failed: nothing was published
            self.course.restart()
            self.width.before(span, estimates, schema, alone=False)
            yield from self._planned(span, schema, 0.0, None)

    def _planned(
        self, span: Span, schema: TableSchema, planning_s: float, bound: int | None
    ) -> Iterator[Slice]:
        self.bound = bound  # the first chunk's
        for chunk in self.course.chunks(span, self.estimates):  # plan
            yield from self._chunk(chunk, schema, span.head, planning_s)
            planning_s, self.bound = 0.0, None

    def snapshot(self, version: int) -> Iterator[Slice]:
        """The table's state at version, as changes of that version."""
        began = time.monotonic()
        frame, schema = self._snapshot(version)
        chunk = self._sized(frame, Chunk(version, version, sized=False, snapshot=True), schema)
        yield from self._slices(frame, chunk, version, began)

    def resume(self, part: Part) -> Iterator[Slice]:
        """The slices of a version published in parts that follow those published, cut as
        they were (part.slices key-hash slices)."""
        began = time.monotonic()
        chunk = Chunk(part.first, part.last, part.slices, snapshot=part.snapshot)
        if part.snapshot:
            frame, _ = self._snapshot(part.first)
        else:
            in_pool(self.source.spark, HISTORY)
            self.ranges.for_chunk(chunk, None)
            with reading(self.table, chunk.first, chunk.last):
                frame = self.source.changes(chunk.first, chunk.last)
        yield from self._slices(frame, chunk, part.last, began, start=part.done + 1)

    def _take_path(self, span: Span, rows: int) -> None:
        """Read span at the head (the cycle's job) or as a backlog (jobs of its own, in the
        HISTORY pool); a change of path is logged."""
        path = "head" if rows <= HEAD_ROWS and self.cycle is not None else "backlog"
        in_pool(self.source.spark, HISTORY if rows > HEAD_ROWS else FOLLOW)
        if path != self.path:
            versions = f"{span.first}-{span.last}"
            metrics.event("table_path", table=self.table, path=path, versions=versions, rows=rows)
            self.path = path
            self.mark_head(path == "head")

    def mark_head(self, now: bool = False) -> None:
        """Tell the cycle whether this table is at its head (and sends it reads)."""
        if self.cycle is not None:
            self.cycle.at_head(self, now)

    def _collect(self, chunk: Chunk, encoding: Encoding) -> Collect:
        """How chunk's encoded rows are collected: a chunk of one slice at the head in the
        cycle, with its estimated bytes and, when read from its files, what lets it share
        a scan with other tables' reads; any other in a job of its own."""
        cycle = self._cycle_for(chunk)
        if cycle is None:
            return lambda encoded: encoded.toArrow()
        nbytes = self._nbytes(chunk)
        plan = self.source.file_plan(chunk.first, chunk.last)
        sharing = None if plan is None else Sharing(plan, encoding)
        return lambda encoded: cycle.collect(lambda: encoded, nbytes, self.handed, sharing)

    def _nbytes(self, chunk: Chunk) -> int:
        rows = sum(self.estimates.get(v) or 0 for v in range(chunk.first, chunk.last + 1))
        return self.course.width.nbytes(rows)

    def _cycle_for(self, chunk: Chunk) -> Cycle | None:  # a chunk of one slice at the head
        return None if self.path != "head" or chunk.slices > 1 or chunk.snapshot else self.cycle

    def _shared(self, cycle: Cycle, chunk: Chunk, plan: FilePlan, began: float, head: int) -> Slice:
        """chunk's one slice from the cycle's job: its read is built only if the cycle
        reads it alone, not in one scan with other tables' (producer/read/shared.py)."""
        encoding, source, first, last = self.ranges.encoding(), self.source, chunk.first, chunk.last

        def alone() -> DataFrame:
            return encoding.encode(source.read_planned(first, last, plan))

        read_began = time.monotonic()
        found = cycle.collect(alone, self._nbytes(chunk), self.handed, Sharing(plan, encoding))
        rows = finished(found, encoding, self.table)
        return self._slice(chunk, 0, rows, (began, read_began), head)

    def _slice(
        self, chunk: Chunk, index: int, rows: pa.Table, began: tuple[float, float], head: int
    ) -> Slice:
        """The slice, its read logged and its width learned; began: (chunk's, read's)."""
        self.steps.log("slice_read", time.monotonic() - began[1])  # scan, encode, collect
        self.course.width.learn(rows.nbytes, len(rows))
        return Slice(chunk, index, rows, time.monotonic() - began[0], head)

    def _snapshot(self, version: int) -> tuple[DataFrame, TableSchema]:
        in_pool(self.source.spark, HISTORY)
        schema = self.ranges.at(version)
        self.ranges.use(version, schema)
        state = self.source.snapshot(version)
        return snapshot_changes(state, version, self.source.commit_timestamp(version)), schema

    def _chunk(
        self, chunk: Chunk, range_schema: TableSchema | None, head: int, planning_s: float
    ) -> Iterator[Slice]:
        began = time.monotonic() - planning_s
        with self.steps.step("registered"):  # the chunk's schemas, in the registry
            schema = self.ranges.for_chunk(chunk, range_schema)
        first, last = chunk.first, chunk.last
        with reading(self.table, first, last):
            cycle = self._cycle_for(chunk)  # read: its files planned where the cycle reads it
            plan = self.source.plan_changes(first, last) if cycle and chunk.sized else None
            if plan is not None and not plan.scans:  # no file holds a change: no Spark job
                yield self._slice(chunk, 0, ENCODED.empty_table(), (began, time.monotonic()), head)
                return
            if cycle is not None and plan is not None and len(plan.scans) == 1:
                self.ranges.check_columns(plan.columns, schema, chunk)
                yield self._shared(cycle, chunk, plan, began, head)  # a scan others' may share
                return
            if plan is not None:
                frame = self.source.read_planned(first, last, plan)
            else:
                frame = self.source.changes(first, last)
            self.ranges.check_columns(frame.columns, schema, chunk)
            chunk = self._sized(frame, chunk, schema)
            yield from self._slices(frame, chunk, head, began)

    def _sized(self, frame: DataFrame, chunk: Chunk, schema: TableSchema) -> Chunk:
        if chunk.sized:  # else its slices counted: the history had no row count for it
            return chunk
        if not self.course.width.known:
            self.width.sample(frame, schema)
        return self.course.sized(chunk, frame.count())

    def _slices(
        self, frame: DataFrame, chunk: Chunk, head: int, began: float, start: int = 0
    ) -> Iterator[Slice]:
        encoding = self.ranges.encoding()
        collect = self._collect(chunk, encoding)
        if self.bound is not None:  # a first chunk read alone, of a width unknown (Width)
            collect = bounded(collect, self.bound, self.table)
        parts = encoded_slices(frame, chunk.slices, encoding, self.table, start, collect)
        read_began = time.monotonic()
        for index, rows in enumerate(parts, start):
            yield self._slice(chunk, index, rows, (began, read_began), head)
            began = read_began = time.monotonic()
