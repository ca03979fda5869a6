"""A path table's Change Data Feed as a columnar DataFrame, without Delta's Row-based relation.

`spark.read.option("readChangeFeed", ...)` wraps the feed in DeltaCDFRelation, whose scan
turns every row into a JVM `Row` object and back; that alone made encoding a chunk take about
twice as long. Delta's CDCReader.changesToDF builds the same rows straight from the
files, in the schema of the range's last version (the public reader takes the latest), and
from commit files required to have no gap (a version cleaned up raises, as the public
reader does, instead of being skipped).
The table's head version comes from a listing of its log, without history(1)'s Spark job.
Where Kernel loaded the table's head
(producer/follow/log_state.py), a read from the commits' own files needs no DeltaLog: it is
loaded for Delta's reader only. All are Delta-internal, so when the running Delta lacks
them the public API is used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from producer import metrics
from producer.errors import VersionUnavailableError
from producer.follow.commit_log import CommitLog
from producer.follow.commits import FILES_KEPT
from producer.follow.log_state import LogFiles, LogState
from producer.read.file_read import FilePlan, plan_files, read_plan
from producer.read.read_in import Ends, ReadIn
from services.jvm_names import jvm_class, scala_object

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("cdfbridge.producer")


class DirectChangeFeed:
    """A path table's changes. Its DeltaLog (`delta_log()`) is loaded when Delta's reader is
    first needed if Kernel loaded the table's head (`loaded`: its files and state), else at once."""

    def __init__(
        self,
        spark: SparkSession,
        delta_log: Callable[[], Any],
        read_files: bool = True,
        loaded: tuple[LogFiles, LogState] | None = None,
    ) -> None:
        self.spark, self.read_files = spark, read_files
        self._delta_log, self._loaded = delta_log, None if loaded else delta_log()
        self.available = True
        # Looked up once: py4j resolves a dotted JVM name one segment at a time.
        self._option: Any = jvm_class(spark, "scala.Option")
        self._reader: Any = None  # Delta's CDCReader, on first use (it may be missing)
        self.commits: CommitLog | None = self._call(lambda: self._commit_log(loaded))
        # The snapshot each read is read in (producer/read/read_in.py).
        state = loaded[1] if loaded else None
        self._in = ReadIn(lambda: self._log, lambda: self._none, self.commits, state, read_files)
        # The last read from its files: (first, last) and its plan, which a cycle may read
        # with other tables' in one scan (producer/read/shared.py).
        self.planned: tuple[tuple[int, int], FilePlan] | None = None

    @property
    def _log(self) -> Any:
        """Delta's DeltaLog of the table, loaded on first use."""
        if self._loaded is None:
            self._loaded = self._delta_log()
        return self._loaded

    def _commit_log(self, loaded: tuple[LogFiles, LogState] | None) -> CommitLog:
        if loaded is None:
            return CommitLog.of(self.spark, self._log)
        files, state = loaded
        return CommitLog(self.spark, files, state.table_id, state.version)

    def read(self, first: int, last: int) -> DataFrame | None:
        """Changes of versions first..last; None when this Delta has no such internal API."""
        from pyspark.sql import DataFrame

        jdf = self._call(lambda: self._changes(first, last))
        return None if jdf is None else DataFrame(jdf, self.spark)

    def latest_version(self) -> int | None:
        """The table's head from a listing of its log, without the Spark job history(1)
        costs (or from its DeltaLog, where the commit log could not be opened)."""
        commits = self.commits
        if commits is not None:
            version = self._call(commits.latest)
        else:
            version = self._call(lambda: self._log.update(False, self._none, self._none).version())
        return None if version is None else int(version)

    @property
    def _none(self) -> Any:
        return self._option.empty()

    def plan(self, first: int, last: int) -> FilePlan | None:
        """first..last planned as scans of its commits' own files, nothing built yet (a
        cycle reads it in one scan with other tables', producer/read/shared.py): counted as
        a read from its files. None where Delta's reader reads it: read() then."""
        found: FilePlan | None = self._call(lambda: self._planned(first, last)[1])
        if found is not None:
            metrics.READS.labels("files").inc()
        return found

    def read_planned(self, first: int, last: int, plan: FilePlan) -> DataFrame | None:
        """plan's rows (plan(first, last)'s), or Delta's reader's where the scan is refused;
        None when this Delta has no such internal API."""
        from pyspark.sql import DataFrame

        def read() -> Any:
            built = self._built(first, last, plan)
            return built if built is not None else self._by_delta(first, last)

        jdf = self._call(read)
        return None if jdf is None else DataFrame(jdf, self.spark)

    def _changes(self, first: int, last: int) -> Any:
        ends, plan = self._planned(first, last)
        if ends is None:
            return None  # column-mapped: the public reader picks the schema mode for those
        jdf = self._built(first, last, plan) if plan is not None else None
        if jdf is not None:
            metrics.READS.labels("files").inc()
            return jdf
        return self._by_delta(first, last, ends)

    def _planned(self, first: int, last: int) -> tuple[Ends | None, FilePlan | None]:
        """The snapshots first..last is read in, and its files' plan where they may be read."""
        self.planned = None
        if self.commits is not None and self.commits.gone(first):
            # Delta would build first's snapshot and fail without saying why, or, with the
            # later commits known, read the range from the next file there without a word.
            why = f"the commit file of version {first} is gone"
            raise VersionUnavailableError(self.commits.log.root, first, why)
        if self.read_files and self.commits is not None and last - first < FILES_KEPT:
            self.commits.read_back(first, last)  # their actions: Delta's reader reads them too
        # No metadata since the last read's snapshot, or Kernel's head: no log update, no
        # snapshot built. Else Delta's snapshot of the range (and of its first version).
        ends = self._in.kept(first, last) or self._in.snapshots(first, last)
        if ends is None or not ends.files:
            return ends, None
        plan = self._plan_files(first, last)
        self.planned = None if plan is None else ((first, last), plan)
        return ends, plan

    def _by_delta(self, first: int, last: int, ends: Ends | None = None) -> Any:
        """first..last by Delta's reader; None where the public reader must read it."""
        if ends is None or ends.end is None:  # Kernel's head: Delta's snapshots for its reader
            ends = self._in.snapshots(first, last)
            if ends is None:
                return None
        if self._reader is None:
            cdc = "org.apache.spark.sql.delta.commands.cdc.CDCReader"
            self._reader = scala_object(self.spark, cdc)
        metrics.READS.labels("delta").inc()
        start, end = ends.start, ends.end
        # What changesToBatchDF does, but with Delta's check that the commit files are
        # contiguous from `first` (failOnDataLoss): without it a range whose first commit
        # file was cleaned up behind a checkpoint reads the later versions alone, silently.
        none = self._none
        changes = self._log.getChanges(first, last, none, True)
        spark = self.spark._jsparkSession
        found = self._reader.changesToDF(
            end, first, last, changes, spark, none, False, False, self._option.apply(start)
        )
        return found.fileChangeDf()

    def _plan_files(self, first: int, last: int) -> FilePlan | None:
        """first..last's files as scans, if the shape and every commit allow."""
        shape = self._in.shape
        found = self.commits.files(first, last) if shape and self.commits else None
        if shape is None or not found or self.commits is None:
            return None
        from py4j.protocol import Py4JJavaError

        try:
            return plan_files(self.spark, self.commits.log, shape, found)
        except Py4JJavaError as exc:  # a commit's time could not be read: Delta's reader
            _refused(exc, first, last)
            return None

    def _built(self, first: int, last: int, plan: FilePlan) -> Any:
        """plan's rows (a py4j DataFrame); None where the scan is refused as planned."""
        from py4j.protocol import Py4JJavaError

        try:
            return read_plan(self.spark, plan)._jdf
        except Py4JJavaError as exc:  # a file gone since, say: Delta's reader reads it
            _refused(exc, first, last)
            return None

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


def _refused(exc: Any, first: int, last: int) -> None:
    """A read of first..last from its files refused as planned: Delta's reader reads it."""
    why = str(exc.java_exception)[:300]
    metrics.event("file_read_refused", logging.WARNING, versions=[first, last], error=why)
