"""A path table's new commits, found without a Spark job: its `_delta_log/<version>.json`
files, looked for through the table's own Hadoop file system (so local paths, s3a:// and
abfss:// alike) and each read once.

An idle table's looks for its next commit file are grouped with the other tables'
(producer/follow/probes.py); a poll then takes that answer, else it costs one `exists` call. A
new commit's file is read for what the follow loop needs before reading its changes:
- its change rows, from its operation metrics (the chunk plan's estimates);
- whether it carries a `metaData` or `protocol` action. Only then can the table's schema,
  its column mapping or its features have changed, so a run of commits without one
  (`settled`) is read with the schema and the Delta snapshot already known, with no
  DeltaLog.update and no schema analysis.

A start reads the commit files of its first versions the same way (`read_back`): when none
after the first changes the table, their schema and snapshot are the head's, and no older
snapshot is built (each costs a Spark job where the table has no checksum files).

Each new commit is also checked to be the same table's (`LogReplacedError` otherwise),
before any of its changes is read: a table dropped and created again at its path while it
is followed has a log whose versions start over, and whose later versions are not the
continuation of the ones published. Two signs, each cheap:
- a `metaData` action whose id is not the followed table's (Delta's `metaData.id`, which a
  table created again does not keep);
- the commit file of the last version known (read before, or, at a start, the one of the
  snapshot loaded, looked at when the log is opened) no longer the same file (its length
  and modification time): Delta never rewrites a commit file, so a changed one belongs to
  a new log. A table created again between its load and the first poll is caught so too.

Catalog tables, whose log is not a plain path, keep Delta's own detection (DeltaSource).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from producer.errors import LogReplacedError
from producer.follow.commits import Commits, parsed
from producer.follow.log_state import LogFiles, delta_log_files
from producer.follow.probes import UNGROUPED, Probe
from services.jvm_names import jvm_class
from services.spark_errors import java_classes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class CommitLog(Commits):
    """The commit files of the table whose log is `files`, loaded at `version` with Delta
    id `table_id` (producer/follow/log_state.py)."""

    def __init__(self, spark: SparkSession, files: LogFiles, table_id: str, version: int) -> None:
        super().__init__()
        self.table_id = table_id  # the followed table's id as loaded
        self.log = files
        self._path_of: Any = jvm_class(spark, "org.apache.hadoop.fs.Path")
        self._conf, self._dir, self._fs, self._store = (
            files.conf,
            files.log_dir,
            files.fs,
            files.store,
        )
        self._probe: tuple[int, Any] | None = None  # the next version and its file's path
        self._looked: tuple[int, bool] | None = None  # a grouped look's answer, not used yet
        instance = jvm_class(spark, "java.lang.System").identityHashCode(self._fs)
        self._group = f"{self._fs.getUri()} {instance}"  # its file system, for grouped looks
        self._dir_path = str(self._dir.toUri().getPath()).rstrip("/")  # ... and its folder
        # (version, its commit file) last known to be the followed table's: at first the
        # loaded one's, as the file system tells now (a listing and a look at one file
        # may round times differently on object stores).
        self._known: tuple[int, tuple[int, int] | None] = (version, self._identity(version))

    @classmethod
    def of(cls, spark: SparkSession, delta_log: Any) -> CommitLog:
        """The commit log of a loaded DeltaLog (a py4j handle), from its snapshot."""
        snapshot = delta_log.unsafeVolatileSnapshot()
        table_id, version = str(snapshot.metadata().id()), int(snapshot.version())
        return cls(spark, delta_log_files(delta_log), table_id, version)

    def latest(self) -> int:
        """The table's newest version, as Delta's log update finds it: the last commit file
        listed from the last known version's on (from the log's start where none is: a log
        written again may be shorter). A gap is left to the read, which refuses it."""
        versions = self._listed(self._known[0]) or self._listed(0)
        return versions[-1] if versions else -1  # no log: as Delta's update says, none yet

    def _listed(self, start: int) -> list[int]:
        """The versions of the commit files listed from start's on (none: no log folder)."""
        from py4j.protocol import Py4JJavaError

        try:
            found = self._store.listFrom(self._file(start), self._conf)
        except Py4JJavaError as exc:
            if "java.io.FileNotFoundException" in java_classes(exc):
                return []
            raise
        versions = []
        while found.hasNext():
            name = str(found.next().getPath().getName())
            if len(name) == 25 and name.endswith(".json") and name[:20].isdigit():
                versions.append(int(name[:20]))
        return sorted(versions)

    def newest(self, after: int) -> int:
        """The last version of the run of commit files that follows version `after`
        (`after` itself when there is none yet), each new one read and checked to be the
        followed table's (LogReplacedError)."""
        if self._known[0] != after:  # a start: `after` is taken as ours, the known file kept
            self._check_known()
            self._known = (after, self._identity(after))
        version = after
        while self._found(version + 1):
            version += 1
        if version > after:
            self._check_same_log()
            self._known = (version, self._identity(version))
        return version

    def probe(self, after: int) -> Probe | None:
        """A grouped look (producer/follow/probes.py) at the first commit file after `after` not
        read yet; None where its path cannot be grouped."""
        version = after + 1
        while version in self:
            version += 1
        path = f"{self._dir_path}/{version:020d}.json"
        return None if UNGROUPED & set(path) else Probe(version, path, self._group, self._fs)

    def looked(self, version: int, found: bool) -> None:
        """A grouped look found version's commit file there (or not): the next poll takes
        that answer instead of its own `exists` call."""
        self._looked = (version, found)

    def read_back(self, first: int, last: int) -> None:
        """Read the commit files of first..last not read yet (a start's versions, before
        the snapshot loaded): their estimates and whether they change the table, and their
        files again where they were let go (a start that found more than FILES_KEPT
        commits after its first). A file cleaned up behind a checkpoint is left unread, and
        says nothing."""
        self.forget_dropped(first, last)
        for version in range(first, last + 1):
            if version not in self:
                self._found(version)

    def gone(self, version: int) -> bool:
        """Whether version's commit file is no longer there (cleaned up behind a checkpoint):
        one `exists` call unless it was read before (Delta reads it anyway, right after)."""
        if version in self:
            return False
        return not self._fs.exists(self._file(version))

    def _check_same_log(self) -> None:
        """The new commits name no other table, and the known commit file is unchanged."""
        others = [c for c in self._by_version.values() if c.table_id not in (None, self.table_id)]
        if others:
            found = others[0]
            why = f"its version {found.version} names Delta id {found.table_id}"
            raise LogReplacedError(f"{why}, not {self.table_id}")
        self._check_known()

    def _check_known(self) -> None:
        """The commit file last known to be the table's is still the same file (one gone,
        cleaned up behind a checkpoint, tells nothing)."""
        version, known = self._known
        now = self._identity(version)
        if known is not None and now is not None and now != known:
            why = f"the commit file of its version {version} was written again since its load"
            raise LogReplacedError(why)

    def _file(self, version: int) -> Any:
        return self._path_of(self._dir, f"{version:020d}.json")

    def _identity(self, version: int) -> tuple[int, int] | None:
        """(length, modification time) of version's commit file; None when it is gone."""
        path = self._file(version)
        if not self._fs.exists(path):
            return None
        status = self._fs.getFileStatus(path)
        return int(status.getLen()), int(status.getModificationTime())

    def _found(self, version: int) -> bool:
        if version in self:
            return True
        if self._probe is None or self._probe[0] != version:
            self._probe = (version, self._file(version))
        path = self._probe[1]
        looked, self._looked = self._looked, None
        there = looked[1] if looked and looked[0] == version else self._fs.exists(path)
        if not there:
            return False
        text = str(self._store.read(path, self._conf).mkString("\n"))
        self.add(parsed(version, text))
        return True
