"""The one place that builds a SparkSession with Delta Lake: the producer's, cdfbridge-verify's
Spark reader's and the tests'. [spark] settings (CDFBRIDGE_SPARK__*) say where it runs and
with which jars; [storage] adds the object store's `fs.s3a.*` settings."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.errors import ConfigError
from services.class_archive import JAVA_OPTIONS, archive_of, usable, with_archive
from services.settings import Section

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

    from services.storage import StorageSettings

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# Every session's: no progress bars in a service's log, times in UTC.
SESSION_CONF = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}
# A session in the process (`local[...]`), sized for a 2-core laptop or CI box. A cluster's
# master (spark://, yarn, k8s://) keeps Spark's own defaults, sized from its executors.
# Every key can be overridden through conf.
SMALL_MACHINE_CONF = {
    "spark.driver.memory": "1g",
    # A heap that grows with the live set (G1 kept 700 MB for 300 MB live): docs/performance.md
    JAVA_OPTIONS: "-XX:+UseSerialGC",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
}
# glibc keeps up to 8 malloc arenas a core for the driver's hundreds of threads (a py4j
# thread per Python thread that calls Spark); two hold the same work in less memory.
DRIVER_MALLOC = ("MALLOC_ARENA_MAX", "2")
_CHOOSES_GC = re.compile(r"-XX:[+-]Use\w*GC\b")
# spark-avro warns once per task that the key's Avro schema is non-nullable where Spark's
# column is nullable; a NULL key is refused before it is encoded (NullKeyError).
QUIET_LOGGERS = {
    "org.apache.spark.sql.avro.AvroSerializer": "ERROR",
    # FAIR pools are made on first use (one per table), each with a warning that it was not
    # declared in a file: the defaults (weight 1) are what the producer wants.
    "org.apache.spark.scheduler.FairSchedulableBuilder": "ERROR",
    # Kernel (producer/follow/log_state.py) warns of each table with no checkpoint yet.
    "io.delta.kernel.internal.snapshot.SnapshotManager": "ERROR",
}
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[\w.]*(?:-\d+)?\.jar$")


class _StackHome(BaseSettings):
    """The local stack's state directory, read as stack/settings.py reads it
    (CDFBRIDGE_STACK_HOME, default ./.stack), for the jars `cdfbridge-stack fetch spark` puts
    under it."""

    model_config = SettingsConfigDict(env_prefix="CDFBRIDGE_STACK_", extra="ignore")

    home: Path = Path(".stack")


def stack_jars() -> Path:
    """The stack's Spark jars: <state directory>/lib/spark."""
    return _StackHome().home.expanduser().resolve() / "lib" / "spark"


class SparkSection(Section):
    master: str = "local[*]"
    """Spark master URL: `local[*]` runs Spark in the producer's process;
    `spark://host:7077`, `yarn` or `k8s://...` run it on a cluster."""
    start_attempts: int = Field(default=5, gt=0)
    """Tries to reach the master and start the session, with back-off (0.5, 1, 2 ... 30 s)."""
    conf: dict[str, str] = Field(default_factory=dict)
    """Any Spark or Hadoop setting; wins over what [storage] sets (spark.hadoop.fs.s3a.*)."""
    jars_dir: Path = Field(default_factory=stack_jars)
    """Delta, spark-avro and object-store jars for spark.jars, which the driver also serves
    to a cluster's executors; default: the stack's (cdfbridge-stack fetch spark)."""
    class_sharing: bool = True
    """Start the driver JVM with the class-data archive beside jars_dir when there is a whole
    one (services/class_archive.py; `cdfbridge-stack fetch cds` builds it)."""


def build_spark_session(
    app_name: str,
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    delta_jars: Path | None = None,
) -> SparkSession:
    """A SparkSession with Delta's extension and catalog, and SMALL_MACHINE_CONF when master
    runs in this process.

    delta_jars is a directory of Delta's jars (`cdfbridge-stack fetch` fills one); they go on
    spark.jars unless conf brings its own jars or packages, as it would on a cluster.
    """
    from pyspark.sql import SparkSession

    sized = SMALL_MACHINE_CONF if in_process(master) else {}
    settings = {**DELTA_CONF, **SESSION_CONF, **sized, **(conf or {})}
    settings |= java_options(sized.get(JAVA_OPTIONS), (conf or {}).get(JAVA_OPTIONS))
    if delta_jars is not None and not {"spark.jars", "spark.jars.packages"} & settings.keys():
        settings["spark.jars"] = ",".join(str(jar) for jar in extra_jars(delta_jars))
    if in_process(master):  # the driver JVM is started from this process's environment
        os.environ.setdefault(*DRIVER_MALLOC)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _quiet(session, QUIET_LOGGERS)
    return session


def java_options(ours: str | None, theirs: str | None) -> dict[str, str]:
    """The driver's JVM options: ours, then conf's (the class archive's, the user's), which
    replace ours when they choose a garbage collector of their own."""
    if ours is None or theirs is None or _CHOOSES_GC.search(theirs):
        return {}
    return {JAVA_OPTIONS: f"{ours} {theirs}"}


def in_process(master: str) -> bool:
    """Whether master runs Spark inside the driver's process (`local`, `local[4]` ...)."""
    return master == "local" or master.startswith("local[")


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


def session_for(settings: SparkSection, storage: StorageSettings, app_name: str) -> SparkSession:
    """A session on the settings' master, with the storage's `fs.s3a.*` settings under the
    settings' conf (which wins) and the jars of settings.jars_dir when it exists, the driver
    JVM sharing the classes of their archive when there is a whole one.

    Retried with back-off while the master cannot be reached; SparkUnavailableError after
    settings.start_attempts tries.
    """
    from services.spark_master import start_with_retries

    jars = settings.jars_dir if settings.jars_dir.is_dir() else None
    conf = conf_for(settings, storage)
    archive = archive_of(jars) if jars and settings.class_sharing else None
    if jars and archive and usable(archive, jars):
        conf = with_archive(conf, archive)
    session = start_with_retries(
        settings.master,
        lambda: build_spark_session(app_name, settings.master, conf, jars),
        settings.start_attempts,
    )
    _require_delta(session, settings.jars_dir)
    return session


class DeltaClassesMissingError(ConfigError):
    """The session's driver cannot load Delta's classes: no jars where jars_dir points, and
    none that [spark] conf names."""

    def __init__(self, jars_dir: Path) -> None:
        self.jars_dir = jars_dir
        where = "holds no jars" if jars_dir.is_dir() else "does not exist"
        self.why = f"the jars directory {jars_dir} {where}"
        super().__init__(
            f"Spark cannot load Delta Lake's classes: {self.why}, and no jar [spark] conf "
            "names (spark.jars, spark.jars.packages) holds them. Run `cdfbridge-stack fetch "
            "spark`, or point CDFBRIDGE_STACK_HOME (or CDFBRIDGE_SPARK__JARS_DIR) at the "
            "stack directory's jars, or set spark.jars.packages to io.delta:delta-spark_2.13 "
            "and org.apache.spark:spark-avro_2.13 through --conf"
        )


def _require_delta(session: SparkSession, jars_dir: Path) -> None:
    """DeltaClassesMissingError when the session's driver cannot load Delta's classes:
    without them every read fails later with py4j's "'JavaPackage' object is not callable"."""
    from py4j.java_gateway import JavaClass

    jvm: Any = session._jvm
    if not isinstance(jvm.io.delta.tables.DeltaTable, JavaClass):
        session.stop()
        raise DeltaClassesMissingError(jars_dir)


def column(name: str) -> Column:
    """A top-level column by its Delta name, whatever characters it holds."""
    from pyspark.sql.functions import col

    return col("`" + name.replace("`", "``") + "`")
