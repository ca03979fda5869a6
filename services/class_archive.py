"""Class-data sharing for the Spark driver's JVM: the classes a producer loads, mapped from
one archive instead of read from jars and verified one by one, which shortens the start of
the session and of the first Delta log load (docs/performance.md).

`cdfbridge-stack fetch cds` (run by `make setup` and by the image's build) makes the archive
at `<jars_dir>.jsa` (stack/class_archive.py):

1. a JVM runs the producer's own Spark calls on a small table and dumps the classes it
   loaded as it exits, under a temporary name;
2. a second JVM starts with that archive, sharing required (-Xshare:on): a corrupt archive
   fails there, not in a producer;
3. the archive is renamed into place and `<archive>.json` records its size and what it was
   built against (the java binary, pyspark's version, the jars).

A session uses the archive only while that record matches (`usable`): a truncated archive
crashes the JVM that maps it, so none is handed over unchecked, and after a JDK upgrade
`cdfbridge-stack fetch cds` builds a new one. The JVM itself compares the JDK and the class
path too, and starts without the archive when they differ.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# The user's own options already choose: theirs are left alone.
THEIRS = ("-XX:SharedArchiveFile", "-Xshare", "-XX:ArchiveClassesAtExit")

log = logging.getLogger("cdfbridge.spark")


def archive_of(jars_dir: Path) -> Path:
    """Where the archive for the jars of jars_dir lives: beside it, `<jars_dir>.jsa`."""
    return jars_dir.with_name(jars_dir.name + ".jsa")


def record_of(archive: Path) -> Path:
    """Where the archive's record lives: `<archive>.json`."""
    return archive.with_name(archive.name + ".json")


def built_against(jars_dir: Path) -> dict[str, Any]:
    """What an archive depends on: the java that pyspark starts (its path and its file's
    time, which a JDK upgrade changes), pyspark's jars (its version) and ours."""
    import pyspark

    return {
        "java": _java(),
        "pyspark": pyspark.__version__,
        "jars": sorted(j.name for j in jars_dir.glob("*.jar")),
    }


def _java() -> str | None:
    """pyspark's java: $JAVA_HOME/bin/java, else the one on PATH, as `path@mtime`."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if found is None:
        return None
    real = Path(found).resolve()
    try:
        return f"{real}@{real.stat().st_mtime_ns}"
    except OSError:
        return None


def record(archive: Path, jars_dir: Path) -> None:
    """Write the archive's record: its size and what it was built against."""
    found = {"size": archive.stat().st_size, **built_against(jars_dir)}
    record_of(archive).write_text(json.dumps(found, indent=1))


def usable(archive: Path, jars_dir: Path, warn: bool = True) -> bool:
    """The archive exists, whole, and was built against these jars; a warning (unless not
    warn) says how to rebuild one that is there but not usable."""
    if not archive.exists():
        return False
    try:
        expected = json.loads(record_of(archive).read_text())
        found = {"size": archive.stat().st_size, **built_against(jars_dir)}
    except (OSError, ValueError):
        expected, found = None, {}
    if expected == found:
        return True
    if warn:
        log.warning(
            "the JVM class-data archive %s is incomplete or was built for another java or other "
            "jars; starting without it (rebuild it: cdfbridge-stack fetch cds)",
            archive,
        )
    return False


def with_archive(conf: Mapping[str, str], archive: Path) -> dict[str, str]:
    """conf with the driver JVM sharing archive's classes, unless conf chooses already."""
    options = conf.get(JAVA_OPTIONS, "")
    if any(option in options for option in THEIRS):
        return dict(conf)
    return {**conf, JAVA_OPTIONS: f"{options} -XX:SharedArchiveFile={archive}".strip()}
