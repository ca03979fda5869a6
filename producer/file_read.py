"""A settled run of commits read from their own files through Spark, giving the rows Delta's
change-feed reader gives, without its cost per read.

Delta's reader builds a file index per read that collects the commit's files with a Spark
job of its own, inside the cycle's job: about 51-60 ms a read against 15-17 ms for the same
files as Parquet scans (docs/performance.md, "Where a cycle's time goes"). Here the files
come from the commit's actions, which the commit log has read already (producer/
commit_files.py says which, by Delta's rule), and each group of files of one kind, version
and partition is one Parquet scan, in the table's schema, with what Delta's reader puts on
every row given as constants:
- the table's partition columns, from the action's `partitionValues` (cast from text as
  Delta casts them, for the types whose text casts the same in every mode);
- `_change_type`: `insert` for an `add`, `delete` for a `remove`, a `cdc` file's own column;
- `_commit_version`, and `_commit_timestamp`: the commit's in-commit timestamp, else its
  commit file's time as Delta's history makes it monotonic (Delta's own function).

Only a table whose schema and features are on the allow-list below takes this path: no
column mapping, no type widening, no row tracking, nothing unknown. Anything else, a commit
commit_files leaves to Delta, or a span of many scans is read by Delta's reader.
tests/integration/test_file_read.py reads the same commits both ways: the same rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from producer.commit_files import GLOB, CommitFiles
from producer.cycle import balanced_union
from schemas import changes

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
# Scans a span may take (one per version, kind and partition): one costs about 60% of a
MAX_SCANS = 2  # read by Delta's reader, which scans each kind once a span (cycle_bench.py)
_INTEGRAL = {"byte": 7, "short": 15, "integer": 31, "long": 63}  # bits besides the sign
_NUMBER = re.compile(r"-?[0-9]{1,19}")


@dataclass(frozen=True)
class Shape:
    """A table's columns and its partition columns' types."""

    columns: tuple[str, ...]  # the table's, in its order
    partitions: dict[str, str]  # name -> Spark type name
    read_schema: str  # what every file is read in: the columns, then the change columns (JSON)


def shape_of(snapshot: Any) -> Shape | None:
    """The snapshot's shape, if its features and schema may be read from the files."""
    protocol = json.loads(str(snapshot.protocol().json()))["protocol"]
    features = set(protocol.get("readerFeatures", [])) | set(protocol.get("writerFeatures", []))
    metadata = json.loads(str(snapshot.metadata().json()))["metaData"]
    text = metadata["schemaString"]
    mapped = metadata.get("configuration", {}).get("delta.columnMapping.mode", "none")
    if features - FEATURES or protocol["minReaderVersion"] > 3 or mapped != "none":
        return None
    if any(mark in text for mark in SCHEMA_MARKS):
        return None
    schema = json.loads(text)
    types = {f["name"]: f["type"] for f in schema["fields"]}
    partitions = {p: types[p] for p in metadata["partitionColumns"]}
    if not all(t in (*_INTEGRAL, "string", "boolean", "date") for t in partitions.values()):
        return None
    # As Delta's reader reads them (CDCReader.cdcReadSchema): a column a file lacks is
    # NULL, and every partition and change column is replaced by its value below.
    change_columns = [(changes.CHANGE_TYPE, "string"), (changes.COMMIT_VERSION, "long")]
    change_columns.append((changes.COMMIT_TIMESTAMP, "timestamp"))
    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in change_columns]
    read_schema = json.dumps({**schema, "fields": [*schema["fields"], *fields]})
    return Shape(tuple(types), partitions, read_schema)


def read_files(
    spark: SparkSession,
    delta_log: Any,
    shape: Shape,
    commits: Sequence[tuple[int, CommitFiles]],
    reader: Any,
) -> DataFrame | None:
    """The changes of commits (version, files), as Delta's reader gives them; None where a
    file's path or partition value, or a commit's time, is not what this path reads, or it
    takes over MAX_SCANS scans. A few py4j calls a scan: the scan, one selectExpr."""
    from pyspark.sql import DataFrame

    if len(groups := _groups(commits)) > MAX_SCANS:
        return None
    root = str(delta_log.dataPath().toString())
    stamps = _timestamps(delta_log, commits, reader)
    jvm: Any = spark._jvm
    session = spark._jsparkSession
    schema = session.parseDataType(shape.read_schema)
    frames = []
    for (version, kind, values), children in groups.items():
        paths = [_absolute(root, c) for c in children]
        literals = _partition_literals(shape, dict(values))
        if stamps is None or literals is None or None in paths:
            return None
        for folder, files in _by_folder([p for p in paths if p is not None]).items():
            scan = session.read().schema(schema).option("basePath", folder)
            found = scan.parquet(jvm.PythonUtils.toSeq(files))
            exprs = _exprs(shape, literals, kind, version, stamps[version])
            frames.append(DataFrame(found.selectExpr(jvm.PythonUtils.toSeq(exprs)), spark))
    return balanced_union(frames) if frames else None


def _by_folder(paths: list[str]) -> dict[str, list[str]]:
    """Paths by their folder: read with it as the base, Spark infers no partition from the
    folders' names (the values come from the log, as Delta's reader takes them)."""
    folders: dict[str, list[str]] = {}
    for path in paths:
        folders.setdefault(path.rsplit("/", 1)[0], []).append(path)
    return folders


def _groups(commits: Sequence[tuple[int, CommitFiles]]) -> dict[tuple[Any, ...], list[str]]:
    """The commits' files by (version, kind, partition values): one set of literals each."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for version, found in commits:
        for file in found.files:
            groups.setdefault((version, file.kind, file.partition_values), []).append(file.path)
    return groups


def _timestamps(
    delta_log: Any, commits: Sequence[tuple[int, CommitFiles]], reader: Any
) -> dict[int, int] | None:
    """Each commit's time in ms, as Delta's reader stamps its rows."""
    stamps = {v: f.in_commit_timestamp for v, f in commits}
    missing = [v for v, stamp in stamps.items() if stamp is None]
    if missing:
        found = reader.getNonICTTimestampsByVersion(delta_log, min(missing), max(missing))
        for version in missing:
            stamp = found.get(version)
            stamps[version] = int(stamp.get().getTime()) if stamp.isDefined() else None
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


def _partition_literals(shape: Shape, values: dict[str, str | None]) -> dict[str, str] | None:
    """Each partition column's value as a SQL literal of its type: its text as UTF-8 bytes
    (no quoting to get wrong), cast to the type."""
    literals = {}
    for name, type_name in shape.partitions.items():
        value = values.get(name)
        if value is None:
            literals[name] = f"CAST(NULL AS {type_name})"
        elif _casts_alike(type_name, value):
            text = f"CAST(X'{value.encode().hex()}' AS STRING)"
            literals[name] = text if type_name == "string" else f"CAST({text} AS {type_name})"
        else:
            return None
    return literals


def _casts_alike(type_name: str, value: str) -> bool:
    """Whether Spark casts value to type_name alike with and without ANSI (Delta casts
    partition values without)."""
    if type_name == "string":
        return True
    if type_name == "boolean":
        return value in ("true", "false")
    if type_name == "date":
        try:
            date.fromisoformat(value)  # a real day ...
        except ValueError:
            return False
        return bool(re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value))  # ... written in full
    bits = _INTEGRAL[type_name]
    return bool(_NUMBER.fullmatch(value)) and -(2**bits) <= int(value) < 2**bits


def _exprs(
    shape: Shape, literals: dict[str, str], kind: str, version: int, stamp: int
) -> list[str]:
    change_type = _quoted(changes.CHANGE_TYPE) if kind == "cdc" else f"'{kind}'"
    return [
        *(f"{literals[c]} AS {_quoted(c)}" if c in literals else _quoted(c) for c in shape.columns),
        f"{change_type} AS {_quoted(changes.CHANGE_TYPE)}",
        f"CAST({int(version)} AS BIGINT) AS {_quoted(changes.COMMIT_VERSION)}",
        f"timestamp_millis({int(stamp)}) AS {_quoted(changes.COMMIT_TIMESTAMP)}",
    ]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
