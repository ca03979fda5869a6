"""Following a table: one generator of slices, top to bottom.

    poll    the commit files after the last published      DeltaSource.head (producer/
                                                           commit_log.py), now and then
                                                           DeltaSource.latest_version;
                                                           while idle, wait_for_change
                                                           (producer/follow/idle.py), grouped
    plan    the unpublished versions into chunks           Course (producer/follow/course.py), from
                                                           the commits' row estimates
    read    a chunk's changes, its schema checked first    DeltaSource.changes, RangeSchemas
    encode  key and value as Confluent-framed Avro, the    Encoding (producer/encode/encode.py), in Spark
            column policy's columns left out or hashed
    collect at the head in the cycle's one job, else alone Cycle (producer/read/cycle.py)
    slice   by key hash when one read would hold too many  encoded_slices (producer/encode/slices.py)

Plan to slice are the steps of producer/read/chunks.py. With --snapshot, the table's state at a
version comes first, dressed as changes. producer/lake/table.py drives the generator in a thread
of its own (producer/lake/prefetch.py), one slice ahead of the Kafka sends, so at most a few
slices are in the driver however long the backlog is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from producer.encode.registry import TopicSchemas
from producer.encode.slices import Slice
from producer.encode.table_schemas import RangeSchemas
from producer.errors import LogReplacedError, TableRecreatedError
from producer.follow.course import Course, RowWidth, spans
from producer.follow.idle import Idle, wait_for_change
from producer.follow.probes import Probes
from producer.read.chunks import Chunks
from producer.read.cycle import Cycle
from producer.read.source import DeltaSource
from producer.settings import SourceSection
from producer.spark_errors import lost_driver
from producer.steps import Waterfall
from schemas.column_policy import ColumnPolicy
from schemas.progress import Part


def follow(
    source: DeltaSource,
    schemas: TopicSchemas,
    config: SourceSection,
    start: int,
    snapshot_at: int | None,
    stop: threading.Event,
    steps: Waterfall | None = None,
    resume: Part | None = None,
    cycle: Cycle | None = None,
    ready: Callable[[], None] = lambda: None,
    probes: Probes | None = None,
) -> Iterator[Slice]:
    """Slices of every change from version start on (after the rest of a version published
    in parts, `resume`, and the snapshot at snapshot_at, if any), until --until-version is
    published or stop is set while polling; steps: the start-up steps it takes, logged;
    cycle: where reads at the head are collected with other tables' (else each alone);
    ready: called at its first slice, when a read waits in the cycle, and whenever it
    waits for the table to change; probes: where its looks for new commits are grouped
    with the other tables' (else each is its own call)."""
    width = RowWidth(config.max_rows_per_chunk, config.max_bytes_per_chunk)
    course = Course(start, config.until_version, config.max_versions_per_chunk, width)
    policy = ColumnPolicy.of(config.exclude_columns, config.hash_columns)
    ranges = RangeSchemas(
        source.schema_json, schemas, config.primary_key, config.include_preimage, policy
    )
    ranges.settled = source.settled
    # A read waiting in the cycle needs no turn: the job it joins is the cycle's.
    chunks = Chunks(source, ranges, course, steps or Waterfall(), cycle, handed=ready)
    idle = Idle(config.poll_interval_s, config.idle_poll_max_s)

    def wait() -> bool:  # for the table to change; True: stop
        ready()
        return wait_for_change(source.commits, course.next_version - 1, idle, stop, probes)

    def head() -> int:  # poll: the commit files after the last published, now and then the log
        published = course.next_version - 1
        try:
            latest = source.head(published)
        except LogReplacedError as exc:
            raise TableRecreatedError(source.table, schemas.topic, exc.why) from exc
        if idle.check_log(latest > published):
            latest = source.latest_version()
        if latest < published:  # a log that went backwards: the table was created again
            why = f"its log ends at version {latest}, and version {published} is published"
            raise TableRecreatedError(source.table, schemas.topic, why)
        return latest

    try:
        ranges.check_policy(source.latest_version())  # the columns it names are the table's
        if resume is not None:
            yield from _readied(chunks.resume(resume), ready)
        if snapshot_at is not None:
            yield from _readied(chunks.snapshot(snapshot_at), ready)
        for span in spans(course, head, wait):
            yield from _readied(chunks.span(span), ready)  # plan, read, encode, slice
    except Exception as exc:
        lost = lost_driver(exc, source.spark, course.next_version)
        if lost is None:
            raise
        raise lost from exc
    finally:
        chunks.mark_head(False)


def _readied(slices: Iterator[Slice], ready: Callable[[], None]) -> Iterator[Slice]:
    for piece in slices:
        ready()
        yield piece
