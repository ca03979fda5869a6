"""A path table's new commits, found without a Spark job: its `_delta_log/<version>.json`
files, looked for through the table's own Hadoop file system (so local paths, s3a:// and
abfss:// alike) and each read once.

An idle table costs one `exists` call per poll. A new commit's file is read for what the
follow loop needs before reading its changes:
- its change rows, from its operation metrics (the chunk plan's estimates);
- whether it carries a `metaData` or `protocol` action. Only then can the table's schema,
  its column mapping or its features have changed, so a run of commits without one
  (`settled`) is read with the schema and the Delta snapshot already known, with no
  DeltaLog.update and no schema analysis.

Catalog tables, whose log is not a plain path, keep Delta's own detection (DeltaSource).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from producer.plan import estimate_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

KEPT = 1_000  # commits remembered behind the newest: more than any head span holds


@dataclass(frozen=True)
class Commit:
    version: int
    rows: int | None  # change rows by its operation metrics; None: they do not say
    changes_table: bool  # a metaData or protocol action: schema or features may change


class Commits:
    """The commits read so far, by version: what they say about a range of versions."""

    def __init__(self) -> None:
        self._by_version: dict[int, Commit] = {}

    def __contains__(self, version: int) -> bool:
        return version in self._by_version

    def add(self, commit: Commit) -> None:
        self._by_version[commit.version] = commit
        for version in [v for v in self._by_version if v < commit.version - KEPT]:
            del self._by_version[version]

    def settled(self, first: int, last: int) -> bool:
        """Every commit first..last was read, and none carries metaData or protocol."""
        found = [self._by_version.get(v) for v in range(first, last + 1)]
        return all(c is not None and not c.changes_table for c in found)

    def estimates(self, first: int, last: int) -> dict[int, int | None] | None:
        """Change rows per version first..last, if every commit was read; else None."""
        found = [self._by_version.get(v) for v in range(first, last + 1)]
        if any(c is None for c in found):
            return None
        return {c.version: c.rows for c in found if c is not None}


class CommitLog(Commits):
    """The commit files of the table whose DeltaLog (a py4j handle) is delta_log."""

    def __init__(self, spark: SparkSession, delta_log: Any) -> None:
        super().__init__()
        self._path_of: Any = spark._jvm.org.apache.hadoop.fs.Path  # type: ignore[union-attr]
        self._conf = delta_log.newDeltaHadoopConf()
        self._dir = delta_log.logPath()
        self._fs = self._dir.getFileSystem(self._conf)
        self._store = delta_log.store()
        self._probe: tuple[int, Any] | None = None  # the next version and its file's path

    def newest(self, after: int) -> int:
        """The last version of the run of commit files that follows version `after`
        (`after` itself when there is none yet), each new one read."""
        version = after
        while self._found(version + 1):
            version += 1
        return version

    def _found(self, version: int) -> bool:
        if version in self:
            return True
        if self._probe is None or self._probe[0] != version:
            self._probe = (version, self._path_of(self._dir, f"{version:020d}.json"))
        path = self._probe[1]
        if not self._fs.exists(path):
            return False
        text = str(self._store.read(path, self._conf).mkString("\n"))
        self.add(parsed(version, text))
        return True


def parsed(version: int, text: str) -> Commit:
    """A commit file's lines (one JSON action each) as a Commit."""
    rows, changes_table = None, False
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "metaData" in action or "protocol" in action:
            changes_table = True
        elif "commitInfo" in action:
            rows = estimate_rows(action["commitInfo"].get("operationMetrics"))
    return Commit(version, rows, changes_table)
