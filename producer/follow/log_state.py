"""A path table's log without Delta's DeltaLog: where its files are, and its head's version,
protocol and metadata as Delta Kernel loads them.

Loading a DeltaLog builds the table's latest snapshot, whose protocol and metadata come from
its newest checksum file or, where the table has none (tables written by delta-rs, Flink or
Kernel), from a Spark job over its checkpoint and commit files: with its code generation,
more than a third of the driver JVM's time while a lake of 200 tables starts (a JFR
recording, docs/performance.md). Kernel, which ships with Delta's Spark jars, reads the same
actions in the driver through the table's Hadoop file system, newest commit first, with no
Spark job: 28-35 ms a table against 166 ms for DeltaTable.forPath's first load of the
same table (docs/performance.md, "Where a start goes").

So a path table is opened from these (producer/read/source.py), and its DeltaLog is loaded
only when Delta's own reader is needed. Delta's reader stays the reference:
tests/integration/test_log_state.py loads tables of every kind both ways and compares the
version, protocol, metadata and schema. A table Kernel does not load, or with a feature
not in STATE_FEATURES, is opened by DeltaLog as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from services.jvm_names import java_values, jvm_class, scala_object
from services.storage_errors import storage_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CDF_PROPERTY = "delta.enableChangeDataFeed"


def records_changes(configuration: dict[str, str]) -> bool:
    """Whether a table's configuration enables its Change Data Feed (read as Delta does)."""
    return str(configuration.get(CDF_PROPERTY) or "").lower() == "true"


# Features whose tables' logs are plain commit files, each read the same by Kernel and
# Delta: what the file reads allow (producer/read/file_read.py FEATURES) and those Delta's
# reader reads.
STATE_FEATURES = frozenset(
    {
        *("appendOnly", "invariants", "checkConstraints", "changeDataFeed"),
        *("generatedColumns", "identityColumns", "allowColumnDefaults", "timestampNtz"),
        *("domainMetadata", "v2Checkpoint", "inCommitTimestamp", "vacuumProtocolCheck"),
        *("checkpointProtection", "deletionVectors", "clustering", "columnMapping"),
        *("typeWidening", "typeWidening-preview", "rowTracking"),
        *("variantType", "variantType-preview"),
    }
)


@dataclass(frozen=True)
class LogFiles:
    """Where a path table's log is, as DeltaLog finds it (py4j handles): its qualified
    `_delta_log` folder and table folder, the Hadoop configuration and file system, and
    Delta's LogStore that reads its files."""

    log_dir: Any
    data_path: Any
    conf: Any
    fs: Any
    store: Any

    @property
    def root(self) -> str:
        return str(self.data_path.toString())


@dataclass(frozen=True)
class LogState:
    """The table at version: its protocol and metaData actions, as in its log (JSON)."""

    version: int
    protocol: dict[str, Any]
    metadata: dict[str, Any]

    @property
    def table_id(self) -> str:
        return str(self.metadata["id"])

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.get("configuration") or {})


def delta_log_files(delta_log: Any) -> LogFiles:
    """A loaded DeltaLog's files."""
    conf = delta_log.newDeltaHadoopConf()
    log_dir = delta_log.logPath()
    return LogFiles(
        log_dir, delta_log.dataPath(), conf, log_dir.getFileSystem(conf), delta_log.store()
    )


def log_files(spark: SparkSession, table: str) -> LogFiles:
    """table's files as DeltaLog.forTable finds them: `<table>/_delta_log` qualified by its
    file system, in the session's Hadoop configuration (what a DeltaLog opened without
    options reads with), and the session's LogStore."""
    session: Any = spark._jsparkSession
    conf = session.sessionState().newHadoopConf()
    path = jvm_class(spark, "org.apache.hadoop.fs.Path")
    raw = path(path(table), "_delta_log")
    fs = raw.getFileSystem(conf)
    log_dir = fs.makeQualified(raw)
    store = scala_object(spark, "org.apache.spark.sql.delta.storage.LogStore").apply(session)
    return LogFiles(log_dir, log_dir.getParent(), conf, fs, store)


def load_state(spark: SparkSession, files: LogFiles) -> LogState | None:
    """The table's head as Kernel loads it; None where this Delta has no Kernel, Kernel
    refuses or fails to load the table (DeltaLog then loads it, and names what is wrong),
    or the table has a feature outside STATE_FEATURES. The object store's failures are
    raised as they are."""
    from py4j.protocol import Py4JError

    try:
        engine = jvm_class(spark, "io.delta.kernel.defaults.engine.DefaultEngine").create(
            files.conf
        )
        tables = jvm_class(spark, "io.delta.kernel.TableManager")
        snapshot = tables.loadSnapshot(files.root).build(engine)
        protocol, metadata = snapshot.getProtocol(), snapshot.getMetadata()
        features = set(java_values(spark, protocol.getReaderAndWriterFeatures()))
        state = LogState(
            int(snapshot.getVersion()),
            {
                "minReaderVersion": int(protocol.getMinReaderVersion()),
                "minWriterVersion": int(protocol.getMinWriterVersion()),
                "readerFeatures": sorted(java_values(spark, protocol.getReaderFeatures())),
                "writerFeatures": sorted(java_values(spark, protocol.getWriterFeatures())),
            },
            {
                "id": str(metadata.getId()),
                "schemaString": str(metadata.getSchemaString()),
                "partitionColumns": _partition_columns(metadata),
                "configuration": java_values(spark, metadata.getConfiguration()),
            },
        )
    except Py4JError as exc:
        if storage_error(exc, files.root, None) is not None:
            raise  # the store failed: DeltaLog would only try it again (run() names it)
        return None
    return state if features <= STATE_FEATURES else None


def load_head(spark: SparkSession, table: str) -> tuple[LogFiles, LogState] | None:
    """A path table's log files and its head as Kernel loads it; None where it does not."""
    from py4j.protocol import Py4JError

    try:
        files = log_files(spark, table)
    except Py4JError:
        return None
    state = load_state(spark, files)
    return None if state is None else (files, state)


def _partition_columns(metadata: Any) -> list[str]:
    """The partition columns in the log's order (getPartitionColNames is a set)."""
    values = metadata.getPartitionColumns()
    elements = values.getElements()
    return [str(elements.getString(i)) for i in range(int(values.getSize()))]


def plain_schema(state: LogState) -> dict[str, Any] | None:
    """The table's schema (Spark's StructType as JSON) as its metaData says, where Delta's
    read gives it unchanged: no column mapping, and no field metadata but comments (a
    generated, identity, default or char/varchar column's is Delta's to read); else None."""
    if (state.configuration.get("delta.columnMapping.mode") or "none") != "none":
        return None
    schema: dict[str, Any] = json.loads(state.metadata["schemaString"])
    return schema if _plain(schema) else None


def _plain(data_type: Any) -> bool:
    if not isinstance(data_type, dict):
        return True  # a primitive type's name
    kind = data_type.get("type")
    if kind == "struct":
        return all(
            set(field.get("metadata") or {}) <= {"comment"} and _plain(field["type"])
            for field in data_type["fields"]
        )
    if kind == "array":
        return _plain(data_type["elementType"])
    if kind == "map":
        return _plain(data_type["keyType"]) and _plain(data_type["valueType"])
    return False  # a type this does not know (a user-defined type): Delta's read says
