"""The Delta table: versions, schema, and its Change Data Feed as Spark DataFrames."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from producer import metrics
from producer.errors import ChangeFeedDisabledError, TableNotFoundError, VersionUnavailableError
from producer.follow.commit_log import CommitLog
from producer.follow.commit_metrics import commit_metrics
from producer.follow.log_state import CDF_PROPERTY, load_head, plain_schema, records_changes
from producer.follow.plan import estimate_rows
from producer.read.cdf import DirectChangeFeed
from producer.read.file_read import FilePlan
from services.storage_errors import storage_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Spans of fewer versions read their row estimates from their commit files (5-8 ms each
# on local disk, a GET each on object storage) instead of history(n)'s Spark job (0.3 s
# for a few versions, 0.8 s for 22 and 2.1 s in a cold JVM, where 22 commit files took
# 0.67 s: bench/source_calls_bench.py).
COMMIT_FILES_READ = 50


def is_path(table: str) -> bool:
    return "/" in table or ":" in table or "\\" in table


class DeltaSource:
    """One Delta table, read through Spark; `table` is a path/URI or a catalog name."""

    def __init__(self, spark: SparkSession, table: str, read_files: bool = True) -> None:
        self.spark = spark
        self.table = table
        # A path table's head as Kernel loads it, without the Spark job DeltaTable.forPath
        # may run (producer/follow/log_state.py); None: DeltaTable loads it at once.
        self._loaded = load_head(spark, table) if is_path(table) else None
        self._opened: Any = None if self._loaded else self._open()
        self._direct = (
            DirectChangeFeed(spark, self._delta_log, read_files, self._loaded)
            if is_path(table)
            else None
        )

    @property
    def _delta(self) -> Any:
        """Delta's DeltaTable, opened on first use."""
        if self._opened is None:
            self._opened = self._open()
        return self._opened

    def _delta_log(self) -> Any:
        return self._delta._jdt.deltaLog()

    @property
    def sql_name(self) -> str:
        """The table in SQL; Delta only takes absolute paths there."""
        if not is_path(self.table):
            return self.table
        path = self.table if ":" in self.table else os.path.abspath(self.table)
        return f"delta.`{path.replace('`', '``')}`"  # a backtick in a name is doubled

    def _open(self) -> Any:
        from delta.tables import DeltaTable
        from pyspark.errors import AnalysisException

        try:
            if is_path(self.table):
                return DeltaTable.forPath(self.spark, self.table)
            return DeltaTable.forName(self.spark, self.table)
        except AnalysisException as exc:
            if storage_error(exc, self.table, None) is not None:
                raise  # the store failed, not the path: run() names it with the endpoint
            raise TableNotFoundError(self.table) from exc

    def _read(self, **options: str) -> DataFrame:
        reader = self.spark.read.format("delta").options(**options)
        return reader.load(self.table) if is_path(self.table) else reader.table(self.table)

    def head(self, after: int) -> int:
        """The table's latest version, known to be at least `after`: for a path table, from
        the commit files that follow it (producer/follow/commit_log.py), else latest_version()."""
        commits = self.commits
        return commits.newest(after) if commits is not None else self.latest_version()

    def settled(self, first: int, last: int) -> bool:
        """No commit first..last carries metaData or protocol, as the commit log read them;
        False when it did not read them all (or the table has no commit log)."""
        commits = self.commits
        return commits is not None and commits.settled(first, last)

    @property
    def commits(self) -> CommitLog | None:
        """The commit log of a path table whose Delta has the internals it reads."""
        return self._direct.commits if self._direct else None

    def latest_version(self) -> int:
        latest = self._direct.latest_version() if self._direct else None
        if latest is not None:
            return latest
        return int(self._delta.history(1).select("version").first()[0])

    @property
    def table_id(self) -> str:
        """Delta's id of the table (metaData.id), from the log as first loaded."""
        if self._loaded is not None:
            return self._loaded[1].table_id
        snapshot = self._delta_log().unsafeVolatileSnapshot()
        return str(snapshot.metadata().id())

    def check_change_feed(self) -> None:
        """ChangeFeedDisabledError unless the table's properties, in the log as first
        loaded, enable its Change Data Feed (SHOW TBLPROPERTIES would resolve the table
        again, and detail() costs a Spark job)."""
        if self._loaded is not None:
            configuration = self._loaded[1].configuration
        else:
            found = self._delta_log().unsafeVolatileSnapshot().metadata().configuration()
            present = found.contains(CDF_PROPERTY)
            configuration = {CDF_PROPERTY: str(found.get(CDF_PROPERTY).get())} if present else {}
        if not records_changes(configuration):
            raise ChangeFeedDisabledError(self.table, self.sql_name)

    def schema_json(self, version: int) -> dict[str, Any]:
        """The schema Delta reads the table at version with: the loaded head's where no
        commit between changes the table and its columns carry no metadata Delta's read
        would drop or change (tests/integration/test_log_state.py), else Delta's."""
        state, commits = self._loaded[1] if self._loaded else None, self.commits
        if state is not None:
            holds = commits.holds(state.version, version, version) if commits else False
            schema = plain_schema(state) if holds or version == state.version else None
            if schema is not None:
                return schema
        found: dict[str, Any] = self._read(versionAsOf=str(version)).schema.jsonValue()
        return found

    def version_at(self, timestamp: datetime) -> int:
        """The first version committed at or after timestamp (the table's latest + 1 if none)."""
        from pyspark.sql.functions import col, lit

        history = self._delta.history().where(col("timestamp") >= lit(timestamp))
        first = history.agg({"version": "min"}).first()[0]
        return self.latest_version() + 1 if first is None else int(first)

    def commit_timestamp(self, version: int) -> datetime:
        from pyspark.sql.functions import col

        row = self._delta.history().where(col("version") == version).select("timestamp").first()
        if row is None:
            raise VersionUnavailableError(self.table, version, "not in the table's history")
        return row[0]  # type: ignore[no-any-return]

    def row_estimates(self, first: int, last: int, latest: int) -> Mapping[int, int | None]:
        """Change rows per version first..last from the history's operation metrics: of a
        few versions, read from their commit files (producer/read/cdf.py)."""
        from pyspark.sql.functions import col

        commits, few = self.commits, last - first < COMMIT_FILES_READ
        if commits is not None and few:
            commits.read_back(first, last)  # a start's: they tell schema changes too
        known = commits.estimates(first, last) if commits is not None else None
        if known is not None:
            return known
        metrics = commit_metrics(self.spark, commits.log, first, last) if commits and few else None
        if metrics is not None:
            return {version: estimate_rows(found) for version, found in metrics.items()}

        # history(n) lists the n newest commits: reach back from the head to `first`.
        rows = (
            self._delta.history(latest - first + 1)
            .where(col("version").between(first, last))
            .select("version", "operationMetrics")
            .collect()
        )
        return {int(r[0]): estimate_rows(r[1]) for r in rows}

    def file_plan(self, first: int, last: int) -> FilePlan | None:
        """The plan the last read of first..last was read from its files by, if it was."""
        planned = self._direct.planned if self._direct else None
        return planned[1] if planned is not None and planned[0] == (first, last) else None

    def plan_changes(self, first: int, last: int) -> FilePlan | None:
        """first..last planned as scans of its commits' own files, nothing built yet; None
        where they are not read so: changes() reads it."""
        return self._direct.plan(first, last) if self._direct else None

    def read_planned(self, first: int, last: int, plan: FilePlan) -> DataFrame:
        """The changes plan_changes(first, last) planned, as changes() would read them."""
        frame = self._direct.read_planned(first, last, plan) if self._direct else None
        return frame if frame is not None else self._public_changes(first, last)

    def changes(self, first: int, last: int) -> DataFrame:
        """Changes of versions first..last, with the table's latest schema."""
        frame = self._direct.read(first, last) if self._direct else None
        return frame if frame is not None else self._public_changes(first, last)

    def _public_changes(self, first: int, last: int) -> DataFrame:
        metrics.READS.labels("public").inc()  # no DirectChangeFeed: a catalog table, or none
        return self._read(
            readChangeFeed="true", startingVersion=str(first), endingVersion=str(last)
        )

    def snapshot(self, version: int) -> DataFrame:
        return self._read(versionAsOf=str(version))
