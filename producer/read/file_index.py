"""A Parquet scan of the files a commit log names, planned with no call to the store.

`spark.read.parquet(paths)` lists its paths before it plans: a file-system call a path
from the driver, or, past spark.sql.sources.parallelPartitionDiscovery.threshold (32)
paths, a Spark job of a task a path, each task deserializing the session's Hadoop
configuration. The log gives each file's path and size already, which is what Delta's own
file indexes take (TahoeFileIndex): here they reach Spark's file index through a status
cache of the scan's own, under one root looked up recursively, so nothing is listed and no
partition is inferred from the folders' names (the partition values come from the log).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from producer.read.file_tags import Tag
from services.jvm_names import jvm_class, scala_object

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_SOURCES = "org.apache.spark.sql.execution.datasources"
_ANY_SIZE = 2**62  # the scan's own cache holds its files, whatever they weigh
_NO_EXPIRY = -1


def parquet_files(spark: SparkSession, read_schema: str, files: Sequence[Tag]) -> Any:
    """The rows of files (at least one; each by its path, its size, by which the scan finds
    its footer, and its commit's time, as its modification time) read as Parquet in
    read_schema (JSON), as a py4j DataFrame: three py4j calls a file and eight a scan, and
    none to the store until the scan runs. The first file's path stands for the index's
    root: nothing lists it."""
    session, jvm = spark._jsparkSession, _Jvm.of(spark)
    statuses = spark.sparkContext._gateway.new_array(jvm.status, len(files))  # type: ignore[union-attr]
    paths = [jvm.path(file.path) for file in files]
    for index, (file, path) in enumerate(zip(files, paths, strict=True)):
        statuses[index] = jvm.status(file.size, False, 1, 0, file.stamp, path)
    own = jvm.cache(_ANY_SIZE, _NO_EXPIRY).createForNewClient()
    own.putLeafFiles(paths[0], statuses)
    read_as, some = _schema(spark, read_schema)
    roots = getattr(jvm.nil, "$colon$colon")(paths[0])
    index = jvm.index(session, roots, jvm.recursive, some, own, jvm.none, jvm.none)
    relation = jvm.relation(
        index, jvm.no_partitions, read_as, jvm.none, jvm.parquet, jvm.no_options, session
    )
    return session.baseRelationToDataFrame(relation)


@functools.lru_cache(maxsize=256)
def _schema(spark: SparkSession, read_schema: str) -> tuple[Any, Any]:
    """read_schema as a file source reads it (every column nullable), bare and as an Option."""
    read_as = spark._jsparkSession.parseDataType(read_schema).asNullable()
    return read_as, _Jvm.of(spark).some(read_as)


@dataclass(frozen=True)
class _Jvm:
    """The classes and constant values a scan is made of, looked up once a session."""

    path: Any
    status: Any
    cache: Any
    index: Any
    relation: Any
    some: Any
    nil: Any  # Scala's empty list
    none: Any
    recursive: Any  # the index's options: its files at any depth under its root, as given
    no_options: Any
    no_partitions: Any
    parquet: Any

    @staticmethod
    @functools.cache
    def of(spark: SparkSession) -> _Jvm:
        python = jvm_class(spark, "org.apache.spark.api.python.PythonUtils")
        return _Jvm(
            path=jvm_class(spark, "org.apache.hadoop.fs.Path"),
            status=jvm_class(spark, "org.apache.hadoop.fs.FileStatus"),
            cache=jvm_class(spark, f"{_SOURCES}.SharedInMemoryCache"),
            index=jvm_class(spark, f"{_SOURCES}.InMemoryFileIndex"),
            relation=jvm_class(spark, f"{_SOURCES}.HadoopFsRelation"),
            some=jvm_class(spark, "scala.Some"),
            nil=scala_object(spark, "scala.collection.immutable.Nil"),
            none=jvm_class(spark, "scala.Option").empty(),
            recursive=python.toScalaMap({"recursiveFileLookup": "true"}),
            no_options=python.toScalaMap({}),
            no_partitions=jvm_class(spark, "org.apache.spark.sql.types.StructType")(),
            parquet=jvm_class(spark, f"{_SOURCES}.parquet.ParquetFileFormat")(),
        )
