"""The source side: polls the table, plans chunks, and has Spark encode them ahead of time.

Runs in its own thread and hands Arrow tables to the publisher through a queue of one
slice, so at most two slices are in the driver however long the backlog is. A slice is
bounded in rows and in encoded bytes: how wide a change is comes from a small sample
before the first chunk, then from every slice read.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from producer.encode import KEY_IS_NULL, ORDER, WireSchema, column, encode, snapshot_changes
from producer.errors import (
    NullKeyError,
    SchemaChangeError,
    SparkDriverLostError,
    VersionUnavailableError,
)
from producer.plan import Chunk, plan, rows_per_chunk
from producer.registry import TopicSchemas
from producer.settings import SourceSection
from producer.source import DeltaSource
from producer.spark_errors import OUT_OF_MEMORY, Causes, causes, context_stopped, first_line
from schemas.avro import key_schema, value_schema
from schemas.errors import CdfBridgeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SAMPLE_ROWS = 1_000  # changes encoded to learn their width before the first chunk


@dataclass(frozen=True)
class Slice:
    chunk: Chunk
    index: int  # 0 .. chunk.slices - 1
    rows: pa.Table  # key, value, _order, ... sorted by _order
    read_s: float = 0.0  # Spark time spent on it: schema lookups, planning, scan, encode

    @property
    def last_of_chunk(self) -> bool:
        return self.index == self.chunk.slices - 1


class Reader(threading.Thread):
    """Produces Slices into `out` from version `start` on; a None marks the end."""

    def __init__(
        self,
        source: DeltaSource,
        schemas: TopicSchemas,
        config: SourceSection,
        start: int,
        snapshot_at: int | None,
        stop: threading.Event,
    ) -> None:
        super().__init__(name="cdf-reader", daemon=True)
        self.source, self.schemas, self.config = source, schemas, config
        self.next_version, self.snapshot_at, self.stop = start, snapshot_at, stop
        self.out: queue.Queue[Slice | BaseException | None] = queue.Queue(maxsize=1)
        self.latest = -1
        self._known: tuple[int, dict[str, Any]] | None = None  # last table schema looked up
        self._row_bytes: float | None = None  # encoded size of one change, as last seen

    def run(self) -> None:
        try:
            if self.snapshot_at is not None:
                self._emit_snapshot(self.snapshot_at)
            while not self.stop.is_set():
                if not self._follow():
                    break
            self._put(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the publishing thread to raise
            lost = driver_lost(exc, causes(exc), lambda: context_stopped(self.source.spark))
            self._put(SparkDriverLostError(self.next_version, lost) if lost else exc)

    def _follow(self) -> bool:
        """Emit every chunk up to the table's head; False when --until-version is reached."""
        until = self.config.until_version
        if until is not None and self.next_version > until:
            return False
        self.latest = self.source.latest_version()
        last = self.latest if until is None else min(self.latest, until)
        if self.next_version > last:
            self.stop.wait(self.config.poll_interval_s)
            return True
        estimates = self.source.row_estimates(self.next_version, last, self.latest)
        began = time.monotonic()
        schema = self._schema_of_range(self.next_version, last)
        if self._row_bytes is None and schema is not None:
            # Checked and registered first, as each chunk would: a sample must not read
            # across a schema change the checks refuse. A changing range learns the width
            # from its first chunk instead.
            self._use_schema(last, schema)
            self._row_bytes = self._sample_width(self.next_version, last, estimates, schema)
        lookup_s = time.monotonic() - began
        max_rows = self._max_rows()
        for chunk in plan(
            self.next_version, last, estimates, max_rows, self.config.max_versions_per_chunk
        ):
            self._emit_changes(chunk, schema, lookup_s)
            self.next_version, lookup_s = chunk.last + 1, 0.0
            if self.stop.is_set() or self._max_rows() < max_rows // 2:
                break  # stopping, or changes grew much wider than planned for: plan again
        return True

    def _max_rows(self) -> int:
        config = self.config
        return rows_per_chunk(
            config.max_rows_per_chunk, config.max_bytes_per_chunk, self._row_bytes
        )

    def _sample_width(
        self, first: int, last: int, estimates: Mapping[int, int | None], schema: dict[str, Any]
    ) -> float | None:
        """_measure on the first version of first..last known to hold changes, if any.

        A version without an estimate is left out: it gets a chunk of its own anyway.
        """
        version = next((v for v in range(first, last + 1) if estimates.get(v)), None)
        if version is None:
            return None
        with self._translated_errors(version, version):
            return self._measure(self.source.changes(version, version), schema)

    def _measure(self, frame: DataFrame, table_schema: dict[str, Any]) -> float | None:
        """Encoded bytes of one change of frame, from a sample (None: frame has no rows)."""
        topic, pk = self.schemas.topic, self.config.primary_key
        # Registry ids do not change the size; the sample needs none registered.
        key = WireSchema(key_schema(table_schema, pk, topic), 0)
        value = WireSchema(value_schema(table_schema, topic, pk), 0)
        encoded = encode(frame, key, value, pk, self.config.include_preimage)
        rows = encoded.limit(SAMPLE_ROWS).toArrow()
        return rows.nbytes / len(rows) if len(rows) else None

    def _schema_of_range(self, first: int, last: int) -> dict[str, Any] | None:
        """The table schema of every version first..last if they share one, else None.

        Equal schemas at both ends mean no change in between: Delta refuses a Change Data
        Feed read across a metadata change its read schema cannot represent, so a column
        added and then dropped inside the range still stops the read.
        """
        end = self._table_schema(last)
        if first == last:
            return end
        known = self._known
        start = known[1] if known and known[0] == first - 1 else self._table_schema(first)
        self._known = (last, end)
        return end if start == end else None

    def _table_schema(self, version: int) -> dict[str, Any]:
        schema = self.source.schema_json(version)
        self._known = (version, schema)
        return schema

    def _emit_changes(self, chunk: Chunk, schema: dict[str, Any] | None, read_s: float) -> None:
        began = time.monotonic() - read_s
        if schema is None:  # the range's schema changed: check each chunk's ends
            if chunk.first != chunk.last:
                self._use_schema(chunk.first, self._table_schema(chunk.first))
            schema = self._table_schema(chunk.last)
        self._use_schema(chunk.last, schema)
        with self._translated_errors(chunk.first, chunk.last):
            frame = self.source.changes(chunk.first, chunk.last)
            self._check_columns(frame, schema, chunk)
            chunk = self._sized(frame, chunk, schema)
            for index, rows in enumerate(self._slices(frame, chunk)):
                self._put(Slice(chunk, index, rows, time.monotonic() - began))
                began = time.monotonic()

    def _check_columns(self, frame: DataFrame, schema: dict[str, Any], chunk: Chunk) -> None:
        """The read has every column of the schema. Equal schemas at a range's ends hide a
        column renamed and renamed back in between, and a chunk inside reads the other name.
        (A read may have more columns: Delta reads with a later schema's added ones.)"""
        read = set(frame.columns)
        missing = [f["name"] for f in schema["fields"] if f["name"] not in read]
        if missing:
            detail = f"versions {chunk} were read without the topic's columns {missing}"
            raise SchemaChangeError(self.source.table, chunk.last, detail)

    @contextmanager
    def _translated_errors(self, first: int, last: int) -> Iterator[None]:
        """Delta's errors reading versions first..last, as errors that say what to do."""
        try:
            yield
        except CdfBridgeError:
            raise  # ours say what to do already
        except Exception as exc:
            found = causes(exc)  # by error condition and Java class (producer/spark_errors.py)
            if found.versions_unavailable:
                raise VersionUnavailableError(self.source.table, first, first_line(exc)) from exc
            if found.schema_changed:
                raise SchemaChangeError(self.source.table, last, first_line(exc)) from exc
            raise

    def _emit_snapshot(self, version: int) -> None:
        table_schema = self._table_schema(version)
        self._use_schema(version, table_schema)
        frame = snapshot_changes(
            self.source.snapshot(version), version, self.source.commit_timestamp(version)
        )
        chunk = self._sized(frame, Chunk(version, version, sized=False), table_schema)
        for index, rows in enumerate(self._slices(frame, chunk)):
            self._put(Slice(chunk, index, rows))
        self.next_version = version + 1

    def _sized(self, frame: DataFrame, chunk: Chunk, table_schema: dict[str, Any]) -> Chunk:
        """chunk, its slices counted if the history had no row count for it."""
        if chunk.sized:
            return chunk
        if self._row_bytes is None:
            self._row_bytes = self._measure(frame, table_schema)
        slices = max(1, -(-frame.count() // self._max_rows()))
        return replace(chunk, slices=slices, sized=True)

    def _slices(self, frame: DataFrame, chunk: Chunk) -> Iterator[pa.Table]:
        from pyspark.sql.functions import lit, pmod, xxhash64

        key, value = self.schemas.key, self.schemas.value
        if key is None or value is None:
            raise RuntimeError("schemas are registered before any read")
        pk = self.config.primary_key
        for index in range(chunk.slices):
            part = frame
            if chunk.slices > 1:  # one key always falls in the same slice: its order holds
                bucket = pmod(xxhash64(*[column(c) for c in pk]), lit(chunk.slices))
                part = frame.where(bucket == index)
            rows = encode(part, key, value, pk, self.config.include_preimage).toArrow()
            self._check_keys(rows)
            if len(rows):
                self._row_bytes = rows.nbytes / len(rows)
            yield rows.sort_by(ORDER)
            if self.stop.is_set():
                return

    def _check_keys(self, rows: pa.Table) -> None:
        nulls = rows.column(KEY_IS_NULL)
        if len(rows) and pc.any(nulls).as_py():
            first = pc.index(nulls, True).as_py()
            version = rows.column(ORDER)[first].as_py() // 2
            raise NullKeyError(self.source.table, version, self.config.primary_key)

    def _use_schema(self, version: int, table_schema: dict[str, Any]) -> None:
        name = self.schemas.topic
        self.schemas.use(
            key_schema(table_schema, self.config.primary_key, name),
            value_schema(table_schema, name, self.config.primary_key),
            version,
        )

    def _put(self, item: Slice | BaseException | None) -> None:
        while True:
            try:
                self.out.put(item, timeout=0.5)
                return
            except queue.Full:
                if self.stop.is_set() and item is not None:
                    return


def driver_lost(exc: BaseException, found: Causes, stopped: Callable[[], bool]) -> str | None:
    """Why the Spark driver is gone, if it is (None: it is not): py4j lost the JVM, the JVM
    ran out of memory (found among exc's Java causes), or the SparkContext is stopped."""
    from py4j.protocol import Py4JNetworkError

    if isinstance(exc, Py4JNetworkError | ConnectionRefusedError):
        return first_line(exc)
    if found.out_of_memory:
        return OUT_OF_MEMORY
    if stopped():
        return "its SparkContext was shut down"
    return None
