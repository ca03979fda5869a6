"""A path table's Change Data Feed as a columnar DataFrame, without Delta's Row-based relation.

`spark.read.option("readChangeFeed", ...)` wraps the feed in DeltaCDFRelation, whose scan
turns every row into a JVM `Row` object and back; that alone made encoding a chunk take about
twice as long. Delta's CDCReader.changesToDF builds the same rows straight from the
files, in the schema of the range's last version (the public reader takes the latest), and
from commit files required to have no gap (a version cleaned up raises, as the public
reader does, instead of being skipped).
The table's head version comes from the same log handle, without history(1)'s Spark job,
and so do the operation metrics of a few commits, each read from its commit file, without
the Spark job of history(n) (about 0.3 s, whatever n). All are Delta-internal, so when the
running Delta lacks them the public API is used.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from producer import metrics
from producer.errors import VersionUnavailableError
from producer.follow.commit_log import CommitLog
from producer.follow.commits import FILES_KEPT
from producer.read.file_read import FilePlan, Shape, read_files, shape_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("cdfbridge.producer")


class DirectChangeFeed:
    def __init__(self, spark: SparkSession, delta_table: Any, read_files: bool = True) -> None:
        self.spark, self.read_files = spark, read_files
        self._log = delta_table._jdt.deltaLog()
        self.available = True
        # Looked up once: py4j resolves a dotted JVM name one segment at a time.
        self._option: Any = spark._jvm.scala.Option  # type: ignore[union-attr]
        self._reader: Any = None  # Delta's CDCReader, on first use (it may be missing)
        self._history: Any = None  # what commit_metrics calls, on first use
        self.commits: CommitLog | None = self._call(lambda: CommitLog(spark, self._log))
        # The snapshot the last read was read in (not column-mapped): a later range that
        # the commit log finds settled since its version is read in it as well, from its
        # commits' own files where its shape allows (producer/read/file_read.py).
        self._end: Any = None
        self._shape: Shape | None = None
        # The last read from its files: (first, last) and its plan, which a cycle may read
        # with other tables' in one scan (producer/read/shared.py).
        self.planned: tuple[tuple[int, int], FilePlan] | None = None

    def read(self, first: int, last: int) -> DataFrame | None:
        """Changes of versions first..last; None when this Delta has no such internal API."""
        from pyspark.sql import DataFrame

        jdf = self._call(lambda: self._changes(first, last))
        return None if jdf is None else DataFrame(jdf, self.spark)

    def latest_version(self) -> int | None:
        """The table's head from its log, without the Spark job history(1) costs."""
        version = self._call(lambda: self._log.update(False, self._none, self._none).version())
        return None if version is None else int(version)

    def commit_metrics(self, first: int, last: int) -> dict[int, dict[str, str] | None] | None:
        """Each commit's operation metrics, first..last, from its commit file; None when
        this Delta has no such internal API or a commit file cannot be read."""
        from py4j.protocol import Py4JError

        if not self.available:
            return None
        try:
            return {v: self._metrics(v) for v in range(first, last + 1)}
        except Py4JError:  # Delta's error too (a commit file cleaned up): the history says
            return None

    def _metrics(self, version: int) -> dict[str, str] | None:
        if self._history is None:
            delta = self.spark._jvm.org.apache.spark.sql.delta  # type: ignore[union-attr]
            log = self._log
            self._history = (
                delta.DeltaHistoryManager,
                delta.util.FileNames,
                (log.store(), log.logPath(), log.newDeltaHadoopConf()),
            )
        manager, names, (store, log_path, conf) = self._history
        info = manager.getCommitInfoOpt(store, names.unsafeDeltaFile(log_path, version), conf)
        if not info.isDefined():
            return None
        # The commit info as its JSON action: one py4j call, not one per metric.
        found: dict[str, str] = json.loads(info.get().json())["commitInfo"].get(
            "operationMetrics", {}
        )
        return found or None

    @property
    def _none(self) -> Any:
        return self._option.empty()

    def _changes(self, first: int, last: int) -> Any:
        self.planned = None
        none, some = self._none, self._option.apply
        if self._reader is None:
            cdc = self.spark._jvm.org.apache.spark.sql.delta.commands.cdc  # type: ignore[union-attr]
            self._reader = getattr(getattr(cdc, "CDCReader$"), "MODULE$")
        reader = self._reader
        if self.commits is not None and self.commits.gone(first):
            # Delta would build first's snapshot and fail without saying why, or, with the
            # later commits known, read the range from the next file there without a word.
            table = str(self._log.dataPath().toString())
            why = f"the commit file of version {first} is gone"
            raise VersionUnavailableError(table, first, why)
        if self.read_files and self.commits is not None and last - first < FILES_KEPT:
            self.commits.read_back(first, last)  # their actions: Delta's reader reads them too
        if self._settled(first, last):  # no metadata since: no log update, no snapshot built
            start = end = self._end
            files = True
        else:
            latest = self._log.update(False, none, none)
            # Read with the schema of the range's end: a range before a type widening is
            # read with its own types (producer/read/chunks.py reads no range across a change).
            # The latest snapshot is the end's when no commit after the range changes the
            # table: a first read ending before the head builds no snapshot of its own.
            end = (
                latest
                if self._holds(int(latest.version()), last, last)
                else self._log.getSnapshotAt(last, none, none, False)
            )
            # No commit after first changes the table: first's snapshot is end's.
            unchanged = self.commits is not None and self.commits.settled(first + 1, last)
            start = end if unchanged else self._log.getSnapshotAt(first, none, none, False)
            if _column_mapping(end) or _column_mapping(start):
                return None  # the public reader picks the schema mode for those
            self._end, self._shape = end, shape_of(end) if self.read_files else None
            # A first read, or one after the table changed: from its files too, in end's
            # schema as Delta's reader reads it, where no commit after first changes it.
            files = unchanged
        frame = self._from_files(first, last) if files else None
        if frame is not None:
            metrics.READS.labels("files").inc()
            return frame._jdf
        metrics.READS.labels("delta").inc()
        # What changesToBatchDF does, but with Delta's check that the commit files are
        # contiguous from `first` (failOnDataLoss): without it a range whose first commit
        # file was cleaned up behind a checkpoint reads the later versions alone, silently.
        changes = self._log.getChanges(first, last, none, True)
        spark = self.spark._jsparkSession
        found = reader.changesToDF(
            end, first, last, changes, spark, none, False, False, some(start)
        )
        return found.fileChangeDf()

    def _from_files(self, first: int, last: int) -> DataFrame | None:
        """first..last from their commits' own files, if the shape and every commit allow."""
        found = self.commits.files(first, last) if self._shape and self.commits else None
        if self._shape is None or not found:
            return None
        from py4j.protocol import Py4JJavaError

        try:
            read = read_files(self.spark, self._log, self._shape, found, self._reader)
        except Py4JJavaError as exc:  # the scan was refused as planned: Delta's reader reads it
            why = str(exc.java_exception)[:300]
            metrics.event("file_read_refused", logging.WARNING, versions=[first, last], error=why)
            return None
        if read is None:
            return None
        self.planned = ((first, last), read[1])
        return read[0]

    def _holds(self, version: int, first: int, last: int) -> bool:
        """The snapshot at version has the schema and protocol of first..last: the commit
        log read every commit between it and the range, and in the range after first, none
        with metaData or protocol (it may be older than the range, or the head's)."""
        low, high = min(version, first) + 1, max(version, last)
        return low > high or (self.commits is not None and self.commits.settled(low, high))

    def _settled(self, first: int, last: int) -> bool:
        """The last snapshot read in holds for first..last."""
        if self._end is None or self.commits is None:
            return False
        return self._holds(int(self._end.version()), first, last)

    def _call(self, call: Callable[[], Any]) -> Any:
        """call() through py4j; None once this Delta turns out not to have what it uses."""
        from py4j.protocol import Py4JError, Py4JJavaError
        from pyspark.errors.exceptions.captured import convert_exception

        if not self.available:
            return None
        try:
            return call()
        except Py4JJavaError as exc:  # Delta's own error, e.g. versions gone: as pyspark raises it
            raise convert_exception(exc.java_exception) from exc
        except Py4JError as exc:
            log.warning("using Delta's public API instead of its log: %s", exc)
            self.available = False
            return None


def _column_mapping(snapshot: Any) -> bool:
    return str(snapshot.metadata().columnMappingMode().name()) != "none"
