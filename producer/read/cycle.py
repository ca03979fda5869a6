"""One Spark job per cycle for every table at its head.

A table whose new commits are few (producer/read/chunks.py HEAD_ROWS) hands its read, already
encoded with its own Avro schemas (producer/encode/encode.py), to the process's one Cycle and
waits. The cycle's thread:

1. gathers reads until every table at its head has one waiting, or none came for QUIET_S,
   or GATHER_S passed since the first; then takes them, oldest first, as many as fit in
   max_bytes by their estimates (the first always): the others wait for the next cycle;
2. tags each read with its place, runs the union of them as one Spark job, in the FOLLOW
   pool, and collects it once (Arrow);
3. hands each table its rows. Each table then checks and sorts them, as a read of its own
   would be, and hands them with its progress record to the process's Kafka transaction
   (producer/publish/transactor.py), which the other tables' chunks of the cycle share.

When the union fails, each read is run alone: the table whose read fails gets its error (and
its back-off), the others their rows. Every encoded read has the same columns (key and value
bytes, ordering, flags), so the union lines up whatever the tables' schemas.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from producer import metrics
from producer.gather import gather
from producer.pools import FOLLOW, in_pool
from producer.read.shared import PLACE, Sharing, shared
from producer.read.union import balanced_union

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

GATHER_S = 0.3  # the longest a cycle waits for other tables' reads once one arrives
QUIET_S = 0.1  # ... and the longest it waits for the next one


@dataclass
class _Read:
    frame: Callable[[], DataFrame]  # the read, encoded: built when read alone
    nbytes: int  # estimated size in the driver
    sharing: Sharing | None = None  # how it may share a scan with others (producer/read/shared.py)
    rows: Future[pa.Table] = field(default_factory=Future)


class Cycle:
    """The reads of the tables at their heads, each cycle's run as one Spark job."""

    def __init__(self, spark: SparkSession, max_bytes: int) -> None:
        self.spark, self.max_bytes = spark, max_bytes
        self._waiting: deque[_Read] = deque()
        self._heads: set[object] = set()  # the tables at their heads, who may send reads
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def close(self) -> None:
        """End the cycle's thread once the reads waiting are served."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def at_head(self, table: object, now: bool) -> None:
        """table is at its head now (or no longer): a cycle waits for its reads."""
        with self._changed:
            (self._heads.add if now else self._heads.discard)(table)
            self._changed.notify_all()

    def collect(
        self,
        frame: Callable[[], DataFrame],
        nbytes: int,
        handed: Callable[[], None] = lambda: None,
        sharing: Sharing | None = None,
    ) -> pa.Table:
        """The rows of frame() (a read, encoded), collected in the next cycle with the other
        tables' reads; raises what building or reading it raised. frame is built only where
        the read is not in a scan shared with others (sharing). handed: called once the
        read waits for its cycle."""
        read = _Read(frame, nbytes, sharing)
        with self._changed:
            self._waiting.append(read)
            self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cycle", daemon=True)
                self._thread.start()
        handed()
        return read.rows.result()

    def _run(self) -> None:
        in_pool(self.spark, FOLLOW)
        while reads := self._take():
            self._serve(reads)

    def _take(self) -> list[_Read]:
        """1. The reads of this cycle: oldest first, within max_bytes; none once closed."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self._waiting) or self._closed)
            if not self._waiting:
                self._thread = None
                return []
            self._gather()
            taken = [self._waiting.popleft()]
            nbytes = taken[0].nbytes
            while self._waiting and nbytes + self._waiting[0].nbytes <= self.max_bytes:
                nbytes += self._waiting[0].nbytes
                taken.append(self._waiting.popleft())
        return taken

    def _gather(self) -> None:
        """Wait, holding the lock, for the other tables at their heads to send reads."""
        gather(self._changed, self._count, self._all_in, QUIET_S, GATHER_S)

    def _count(self) -> int:
        return len(self._waiting)

    def _all_in(self) -> bool:
        return len(self._waiting) >= len(self._heads)

    def _serve(self, reads: list[_Read]) -> None:
        """2. and 3.: one job for all, else each alone."""
        if len(reads) == 1:
            _alone(reads[0])
            return
        began = time.monotonic()
        try:
            union = balanced_union(self._frames(reads))
            # Fewer, fuller tasks: a task per table costs more than its few rows.
            rows = union.coalesce(self.spark.sparkContext.defaultParallelism).toArrow()
        except Exception as exc:  # noqa: BLE001 - whose read failed is found by reading each alone
            why = f"{type(exc).__name__}: {exc}"[:300]
            metrics.event("cycle_failed", logging.WARNING, tables=len(reads), error=why)
            for read in reads:
                _alone(read)
            return
        seconds = time.monotonic() - began
        metrics.CYCLE.observe(seconds)
        metrics.CYCLE_TABLES.observe(len(reads))
        metrics.event(
            "cycle", logging.DEBUG, tables=len(reads), rows=len(rows), ms=round(seconds * 1000)
        )
        places = rows.column(PLACE)
        rows = rows.drop_columns([PLACE])
        for i, read in enumerate(reads):
            read.rows.set_result(rows.filter(pc.equal(places, str(i))))

    def _frames(self, reads: list[_Read]) -> list[DataFrame]:
        """The reads' encoded rows, each tagged with its place (PLACE): those of one shape
        from one scan, the others each from its own frame."""
        from pyspark.sql.functions import lit

        groups: dict[str, list[tuple[str, Sharing]]] = {}
        frames, alone = [], []
        for i, read in enumerate(reads):
            sharing = read.sharing
            key = sharing.key() if sharing is not None else None
            if sharing is None or key is None:
                alone.append(i)
            else:
                groups.setdefault(key, []).append((str(i), sharing))
        for group in groups.values():
            frame = shared(self.spark, group) if len(group) > 1 else None
            if frame is None:
                alone.extend(int(place) for place, _ in group)
            else:
                frames.append(frame)
        # A string tag: Spark's code generation keeps it out of the generated code, which
        # is then the same for every table of one shape, and compiled once.
        frames += [reads[i].frame().withColumn(PLACE, lit(str(i))) for i in sorted(alone)]
        metrics.event(
            "cycle_scans", logging.DEBUG, shared=len(frames) - len(alone), alone=len(alone)
        )
        return frames


def _alone(read: _Read) -> None:
    try:
        read.rows.set_result(read.frame().toArrow())
    except BaseException as exc:  # noqa: BLE001 - raised in the table's own thread
        read.rows.set_exception(exc)
