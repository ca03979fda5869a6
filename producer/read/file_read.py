"""A settled run of commits read from their own files through Spark, giving the rows Delta's
change-feed reader gives, without its cost per read.

Delta's reader builds a file index per read that collects the commit's files with a Spark
job of its own, inside the cycle's job: about 51-60 ms a read against 15-17 ms for the same
files as Parquet scans (docs/performance.md, "Where a cycle's time goes"). Here the files
come from the commit's actions, which the commit log has read already (producer/
commit_files.py says which, by Delta's rule), and a span's files, whatever its versions,
kinds and partitions, are one Parquet scan in the table's schema (a second one holds the
files the span adds and later removes). Each row is tagged with
its file's place among them, from the file's name as the scan reports it
(`_metadata.file_name`), and given what Delta's reader puts on every row of that file:
- the table's partition columns, from the action's `partitionValues` (cast from text as
  Delta casts them, for the types whose text casts the same in every mode);
- `_change_type`: `insert` for an `add`, `delete` for a `remove`, a `cdc` file's own column;
- `_commit_version`, and `_commit_timestamp`: the commit's in-commit timestamp, else its
  commit file's time as Delta's history makes it monotonic (Delta's own function).
A read so costs one scan planned, however many versions its span holds.

Only a table whose schema and features are on the allow-list below takes this path: no
column mapping, no type widening, no row tracking, nothing unknown. Anything else, a commit
commit_files leaves to Delta, or a file whose name could be read otherwise (two alike, or
characters a URI escapes) is read by Delta's reader.
tests/integration/test_file_read.py reads the same commits both ways: the same rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from producer.follow.commit_files import GLOB, CommitFiles
from producer.follow.log_state import LogFiles, records_changes
from producer.read.file_index import parquet_files
from producer.read.file_tags import PARTITION_TYPES, TAG, Tag, exprs, partition_literals, tag_of
from producer.read.union import balanced_union
from schemas import changes
from services.jvm_names import jvm_class, scala_object

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FEATURES = frozenset(
    {
        *("appendOnly", "invariants", "checkConstraints", "changeDataFeed"),
        *("generatedColumns", "identityColumns", "allowColumnDefaults", "timestampNtz"),
        *("domainMetadata", "v2Checkpoint", "inCommitTimestamp", "vacuumProtocolCheck"),
        *("checkpointProtection", "deletionVectors", "clustering"),
    }
)
# A table's schema text holding any of these is read by Delta's reader: char and varchar
# (read with padding), a widened type, a variant.
SCHEMA_MARKS = ("__CHAR_VARCHAR_TYPE_STRING", "delta.typeChanges", '"variant"')
_NAME = re.compile(r"[A-Za-z0-9._-]+")  # a file name the scan reports as it is written
RESERVED = frozenset({TAG, "_metadata"})  # a table's column by either name hides the scan's


@dataclass(frozen=True)
class Shape:
    """A table's columns and its partition columns' types."""

    columns: tuple[str, ...]  # the table's, in its order
    partitions: dict[str, str]  # name -> Spark type name
    read_schema: str  # what every file is read in: the columns, then the change columns (JSON)


def actions_of(snapshot: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Delta snapshot's (a py4j handle) protocol and metaData actions, as in its log."""
    protocol = json.loads(str(snapshot.protocol().json()))["protocol"]
    return protocol, json.loads(str(snapshot.metadata().json()))["metaData"]


def shape_of(protocol: dict[str, Any], metadata: dict[str, Any]) -> Shape | None:
    """The table's shape, if its features and schema may be read from the files, and its
    metadata records changes: where it does not, Delta's reader refuses the range."""
    features = set(protocol.get("readerFeatures") or []) | set(protocol.get("writerFeatures") or [])
    text, configuration = metadata["schemaString"], metadata.get("configuration") or {}
    mapped = configuration.get("delta.columnMapping.mode", "none")
    if features - FEATURES or protocol["minReaderVersion"] > 3 or mapped != "none":
        return None
    if not records_changes(configuration):
        return None
    if any(mark in text for mark in SCHEMA_MARKS):
        return None
    schema = json.loads(text)
    types = {f["name"]: f["type"] for f in schema["fields"]}
    partitions = {p: types[p] for p in metadata["partitionColumns"]}
    if not all(t in PARTITION_TYPES for t in partitions.values()):
        return None
    # As Delta's reader reads them (CDCReader.cdcReadSchema): a column a file lacks is
    # NULL, and every partition and change column is replaced by its value below.
    change_columns = [(changes.CHANGE_TYPE, "string"), (changes.COMMIT_VERSION, "long")]
    change_columns.append((changes.COMMIT_TIMESTAMP, "timestamp"))
    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in change_columns]
    read_schema = json.dumps({**schema, "fields": [*schema["fields"], *fields]})
    return Shape(tuple(types), partitions, read_schema)


@dataclass(frozen=True)
class FilePlan:
    """A span's files as Parquet scans: one for all, and a second for the files the span
    adds and then removes; each scan's files by name, with what their rows are given. No
    scan: no file of the span holds a change."""

    shape: Shape
    scans: tuple[dict[str, Tag], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns of its rows (read_plan's): the table's, then the change columns."""
        return (
            *self.shape.columns,
            changes.CHANGE_TYPE,
            changes.COMMIT_VERSION,
            changes.COMMIT_TIMESTAMP,
        )


def plan_files(
    spark: SparkSession, log: LogFiles, shape: Shape, commits: Sequence[tuple[int, CommitFiles]]
) -> FilePlan | None:
    """The scans of commits' files whatever the span's versions, kinds and partitions; None
    where a file's path, name or partition value, or a commit's time, is not what this path
    reads."""
    files = [(version, file) for version, found in commits for file in found.files]
    if RESERVED & set(shape.columns):
        return None
    if not files:  # no file of the span holds a change (a CREATE, OPTIMIZE): no scan at all
        return FilePlan(shape, ())
    stamps = _timestamps(spark, log, commits)
    if stamps is None:
        return None
    root = log.root
    scans: list[dict[str, Tag]] = []  # each: a file's name, what its rows are tagged with
    for version, file in files:
        path = _absolute(root, file.path)
        literals = partition_literals(shape.partitions, dict(file.partition_values))
        name = path.rsplit("/", 1)[-1] if path is not None else ""
        if path is None or literals is None or not _NAME.fullmatch(name):
            return None  # a scan tells its files apart by their names alone
        tags = next((t for t in scans if name not in t), None)
        if tags is None:
            scans.append(tags := {})
        tags[name] = Tag(path, file.size, version, file.kind, stamps[version], literals)
    return FilePlan(shape, tuple(scans))


def read_plan(spark: SparkSession, plan: FilePlan) -> DataFrame:
    """plan's rows: a few py4j calls a scan, the scan and two projections; no scan, none."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    if not plan.scans:
        return spark.createDataFrame([], StructType.fromJson(json.loads(plan.shape.read_schema)))
    frames = [DataFrame(scan(spark, plan.shape, tags), spark) for tags in plan.scans]
    return balanced_union(frames)


def scan(spark: SparkSession, shape: Shape, tags: dict[str, Tag], *more: str) -> Any:
    """One Parquet scan of the files of tags, listing none (producer/read/file_index.py),
    each row given its file's tag, and the columns of `more` (expressions of the tag:
    producer/read/shared.py); a py4j DataFrame."""
    seq = jvm_class(spark, "org.apache.spark.api.python.PythonUtils").toSeq
    files = parquet_files(spark, shape.read_schema, list(tags.values()))
    tagged = files.selectExpr(seq(["*", tag_of(tags)]))
    columns = [*exprs(shape.columns, list(tags.values())), *more]
    return tagged.selectExpr(seq(columns))


def _timestamps(
    spark: SparkSession, log: LogFiles, commits: Sequence[tuple[int, CommitFiles]]
) -> dict[int, int] | None:
    """Each commit's time in ms, as Delta's reader stamps its rows: its in-commit timestamp,
    else its commit file's time made monotonic from up to POTENTIALLY_UNMONOTONIZED_TIMESTAMPS
    commits before (what CDCReader.getNonICTTimestampsByVersion does, from the log's files)."""
    stamps = {v: f.in_commit_timestamp for v, f in commits}
    missing = [v for v, stamp in stamps.items() if stamp is None]
    if missing:
        low = min(missing)
        history = scala_object(spark, "org.apache.spark.sql.delta.DeltaHistoryManager")
        since = max(low - int(history.POTENTIALLY_UNMONOTONIZED_TIMESTAMPS()), 0)
        # To the log's end (py4j hands a small number to Option[Long] as an Integer): the
        # later commits change no earlier one's time, which only looks back.
        until = jvm_class(spark, "scala.Option").empty()
        found = history.getCommitsWithNonIctTimestamps(
            log.store, log.log_dir, since, until, log.conf
        )
        times = {}
        for index in range(len(found) - 1, -1, -1):  # the newest first: the range is at the end
            commit = found[index]
            version = int(commit.version())
            if version < low:
                break
            times[version] = int(commit.timestamp())
        for version in missing:
            stamps[version] = times.get(version)
    if any(stamp is None for stamp in stamps.values()):
        return None
    return {v: int(s) for v, s in stamps.items() if s is not None}


def _absolute(root: str, child: str) -> str | None:
    """child's file as Delta resolves it (`new Path(new URI(child))`, under root when
    relative), in a form Spark's reader takes literally; None where it would not."""
    parts = urlsplit(child)
    if parts.scheme:
        path = f"{parts.scheme}://{parts.netloc}{unquote(parts.path)}"
        tail = unquote(parts.path)
    else:
        tail = unquote(child)
        path = f"{root.rstrip('/')}/{tail}"
    if GLOB & set(path) or ":" in tail or parts.query or parts.fragment:
        return None
    return path
