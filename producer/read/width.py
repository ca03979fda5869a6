"""How a start learns the width of a change before its first chunk fills the driver.

A chunk is bounded in bytes (max_bytes_per_chunk) through the width of a change, which a
start does not know yet. Two ways to learn it:
1. a sample: 1,000 changes of one version encoded in a Spark job of their own, before the
   first chunk is planned (producer/encode/slices.py `sample`);
2. for a first chunk read in a job of its own, a bound in that job instead: each change's key
   and value may take max_bytes / the chunk's rows (producer/follow/course.py `first_bound`),
   and Spark's `raise_error` fails the job at the first change wider than that, before the
   driver holds more than max_bytes. The chunk's rows then teach the width, and the start
   saves the sample's job (the session's first, the dearest: docs/performance.md, "Where a
   start goes"). When the job fails, the width is sampled and the span planned again
   (producer/read/chunks.py).

Only this bound raises in the producer's Spark jobs, so its failure is told by Spark's error
condition for `raise_error`, USER_RAISED_EXCEPTION, not by its text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from producer import metrics
from producer.encode.encode import KEY, VALUE
from producer.encode.slices import sample
from producer.encode.table_schemas import RangeSchemas, TableSchema
from producer.errors import WiderThanBoundError
from producer.follow.course import Course, Estimates, Span
from producer.read.source import DeltaSource
from producer.spark_errors import reading
from services.spark_errors import causes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

RAISED = "USER_RAISED_EXCEPTION"  # Spark's error condition of raise_error
Collect = Callable[["DataFrame"], pa.Table]


class Width:
    """A table's width, learned before its first chunk: sampled, or bounded in its read."""

    def __init__(self, source: DeltaSource, ranges: RangeSchemas, course: Course) -> None:
        self.source, self.ranges, self.course = source, ranges, course

    def before(
        self, span: Span, estimates: Estimates, schema: TableSchema, alone: bool
    ) -> int | None:
        """The bound on a change's key and value bytes that the span's first chunk is read
        with, where it is read alone (a job of its own) and may be; else None, once the
        width is sampled if it must be. Checked and registered first, as each chunk would
        be: a sample must not read across a schema change the checks refuse."""
        version = self.course.sample_version(span, estimates)
        if version is None:
            return None
        bound = self.course.first_bound(span, estimates) if alone else None
        if bound is not None:
            return bound
        self.ranges.use(span.last, schema)
        with reading(self.source.table, version, version):
            self.sample(self.source.changes(version, version), schema)
        return None

    def sample(self, frame: DataFrame, schema: TableSchema) -> None:
        rows = sample(frame, self.ranges.sizing(schema))
        self.course.width.learn(rows.nbytes, len(rows))


def bounded(collect: Collect, bound: int, table: str) -> Collect:
    """collect, for encoded rows whose every change's key and value take at most bound
    bytes: its job fails at a wider one, as WiderThanBoundError."""
    from pyspark.sql.functions import coalesce, col, length, lit, raise_error, when

    size = coalesce(length(col(KEY)), lit(0)) + coalesce(length(col(VALUE)), lit(0))
    checked = when(size <= bound, col(VALUE)).otherwise(raise_error(lit(f"wider than {bound}")))

    def run(encoded: DataFrame) -> pa.Table:
        try:
            return collect(encoded.withColumn(VALUE, checked))
        except Exception as exc:
            if RAISED in causes(exc).conditions:
                metrics.event("first_read_too_wide", table=table, bound_bytes=bound)
                raise WiderThanBoundError(table, bound) from exc
            raise

    return run
