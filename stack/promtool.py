"""promtool, to test the alert rules (monitoring/prometheus-rules.test.yml): taken from
Debian's `prometheus` package without installing it, so that no Prometheus server is set
up or started on the machine. `cdfbridge-stack fetch promtool` (run by `make setup`) puts it
at <lib>/promtool/promtool."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from stack.errors import StackSetupError
from stack.settings import StackSettings
from stack.tools import run_logged, tool

PACKAGE = "prometheus"


def binary(settings: StackSettings) -> Path:
    """Where `fetch promtool` puts it."""
    return settings.lib / "promtool" / "promtool"


def install(settings: StackSettings) -> Path:
    """promtool from the Debian package, unless it is there already."""
    target = binary(settings)
    if target.is_file():
        return target
    hint = "promtool comes from Debian's prometheus package: run this on Debian or Ubuntu"
    apt, dpkg = tool("apt-get", hint), tool("dpkg-deb", hint)
    target.parent.mkdir(parents=True, exist_ok=True)
    log = target.parent / "apt.log"
    with tempfile.TemporaryDirectory() as work:
        run_logged([apt, "download", "-q", PACKAGE], log, f"apt-get download {PACKAGE}", cwd=work)
        packages = sorted(Path(work).glob(f"{PACKAGE}_*.deb"))
        if not packages:
            raise StackSetupError(f"apt-get downloaded no {PACKAGE} package; see {log}")
        package = packages[-1]
        run_logged([dpkg, "-x", str(package), f"{work}/x"], log, f"unpacking {package.name}")
        found = Path(work) / "x" / "usr" / "bin" / "promtool"
        if not found.is_file():
            raise StackSetupError(f"{package.name} holds no usr/bin/promtool")
        partial = target.with_name("promtool.partial")
        shutil.copy2(found, partial)
        partial.replace(target)
    return target
