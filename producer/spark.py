"""The one place that builds a SparkSession with Delta Lake, for the producer and the tests."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from producer.settings import SparkSection
    from schemas.storage import StorageSettings

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# Sized for a 2-core laptop or CI box; every key can be overridden through conf.
SMALL_MACHINE_CONF = {
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.databricks.delta.snapshotPartitions": "2",
}
# spark-avro warns once per task that the key's Avro schema is non-nullable where Spark's
# column is nullable; a NULL key is refused before it is encoded (NullKeyError).
QUIET_LOGGERS = {"org.apache.spark.sql.avro.AvroSerializer": "ERROR"}
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[\w.]*(?:-\d+)?\.jar$")


def build_spark_session(
    app_name: str,
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    delta_jars: Path | None = None,
) -> SparkSession:
    """A SparkSession with Delta's extension and catalog.

    delta_jars is a directory of Delta's jars (`cdfbridge-stack fetch` fills one); they go on
    spark.jars unless conf brings its own jars or packages, as it would on a cluster.
    """
    from pyspark.sql import SparkSession

    settings = {**DELTA_CONF, **SMALL_MACHINE_CONF, **(conf or {})}
    if delta_jars is not None and not {"spark.jars", "spark.jars.packages"} & settings.keys():
        settings["spark.jars"] = ",".join(str(jar) for jar in extra_jars(delta_jars))
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _quiet(session, QUIET_LOGGERS)
    return session


def _quiet(session: SparkSession, loggers: Mapping[str, str]) -> None:
    """Raise the level of the driver JVM's loggers that say nothing a user can act on."""
    jvm: Any = session._jvm
    log4j = jvm.org.apache.logging.log4j
    for name, level in loggers.items():
        log4j.core.config.Configurator.setLevel(name, log4j.Level.getLevel(level))


def extra_jars(delta_jars: Path) -> list[Path]:
    """Delta's jars minus artifacts that pyspark already ships: Spark's own versions win."""
    import pyspark

    shipped = {
        _artifact(jar.name) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")
    }
    return sorted(jar for jar in delta_jars.glob("*.jar") if _artifact(jar.name) not in shipped)


def _artifact(file_name: str) -> str:
    match = _VERSIONED_JAR.match(file_name)
    return match["artifact"] if match else file_name


def conf_for(settings: SparkSection, storage: StorageSettings) -> dict[str, str]:
    """The session's settings: [storage]'s fs.s3a.*, then [spark] conf, which wins."""
    return {**storage.spark_conf(), **settings.conf}


def session_for(
    settings: SparkSection, storage: StorageSettings, app_name: str = "cdfbridge-producer"
) -> SparkSession:
    """The producer's session (and cdfbridge-verify's Spark reader's): the settings' master,
    the storage's `fs.s3a.*` settings under the settings' conf (which wins), Delta and S3
    jars from the stack.

    Retried with back-off while the master cannot be reached; SparkUnavailableError after
    settings.start_attempts tries.
    """
    from producer.master import start_with_retries
    from stack.fetch import lib_dir
    from stack.settings import StackSettings

    jars = settings.jars_dir or lib_dir(StackSettings(), "spark")
    return start_with_retries(
        settings.master,
        lambda: build_spark_session(
            app_name,
            settings.master,
            conf_for(settings, storage),
            jars if jars.is_dir() else None,
        ),
        settings.start_attempts,
    )
