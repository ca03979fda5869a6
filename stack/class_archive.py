"""Builds the Spark driver's class-data archive (services/class_archive.py says how a session
uses it): `cdfbridge-stack fetch cds`, after the Spark jars.

    python -m stack.class_archive dump JARS_DIR ARCHIVE   # step 1: the producer's calls
    python -m stack.class_archive check JARS_DIR ARCHIVE  # step 2: a JVM maps it
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.class_archive import JAVA_OPTIONS, archive_of, record, record_of, usable
from stack.errors import StackSetupError
from stack.tools import run_logged

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APP = "cdfbridge-class-archive"


def build(jars_dir: Path) -> Path:
    """The archive for jars_dir's jars, built (steps 1-3) unless a usable one is there."""
    archive = archive_of(jars_dir)
    if usable(archive, jars_dir, warn=False):
        return archive
    partial = archive.with_name(archive.name + ".partial")
    for stale in (archive, record_of(archive), partial):
        stale.unlink(missing_ok=True)
    for step in ("dump", "check"):
        log = archive.with_name(f"{archive.name}.{step}.log")
        argv = [sys.executable, "-m", "stack.class_archive", step, str(jars_dir), str(partial)]
        run_logged(argv, log, f"building the JVM class-data archive ({step})")
        if not partial.is_file() or partial.stat().st_size == 0:
            raise StackSetupError(f"the JVM wrote no class-data archive; see {log}")
    os.replace(partial, archive)
    record(archive, jars_dir)
    return archive


def _dump(jars_dir: Path, archive: Path) -> None:
    """Step 1: a small table through the producer's own calls; the JVM dumps as it exits."""
    from delta.tables import DeltaTable

    from producer.encode.encode import Encoding, WireSchema
    from producer.encode.slices import encoded_slices
    from producer.read.source import DeltaSource
    from schemas.avro import key_schema, value_schema
    from services.spark_session import build_spark_session

    conf = {JAVA_OPTIONS: f"-XX:ArchiveClassesAtExit={archive}"}
    spark = build_spark_session(APP, conf=conf, delta_jars=jars_dir)
    with tempfile.TemporaryDirectory() as work:
        table = f"{work}/t"
        rows = spark.range(1000).selectExpr("id", "CAST(id AS STRING) AS name", "now() AS at")
        rows.write.format("delta").option("delta.enableChangeDataFeed", "true").save(table)
        DeltaTable.forPath(spark, table).update("id < 10", {"name": "'x'"})
        source = DeltaSource(spark, table)
        source.check_change_feed()
        last = source.latest_version()
        source.row_estimates(0, last, last)
        schema = source.schema_json(last)
        key, value = key_schema(schema, ["id"], "t"), value_schema(schema, "t", ["id"])
        encoding = Encoding(WireSchema(key, 1), WireSchema(value, 2), ["id"], False)
        for _ in encoded_slices(source.changes(0, last), 2, encoding, table):
            pass
    _exit_jvm(spark)


def _exit_jvm(spark: SparkSession) -> None:
    """Stop the session and wait for its JVM to exit, which it does once its stdin closes
    (pyspark's gateway reads it to learn that Python is gone); the dump happens then."""
    from pyspark import SparkContext

    gateway: Any = SparkContext._gateway
    spark.stop()
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=600)


def _check(jars_dir: Path, archive: Path) -> None:
    """Step 2: a session whose JVM must map the archive (-Xshare:on fails it otherwise)."""
    from services.spark_session import build_spark_session

    conf = {JAVA_OPTIONS: f"-XX:SharedArchiveFile={archive} -Xshare:on"}
    _exit_jvm(build_spark_session(APP, conf=conf, delta_jars=jars_dir))


if __name__ == "__main__":
    step, jars, path = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    {"dump": _dump, "check": _check}[step](jars, path)
