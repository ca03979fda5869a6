"""Running the tools that fetch and build the stack (mvn, go, npm), each into its own log."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from stack.errors import StackSetupError


def tool(name: str, install_hint: str) -> str:
    """The path of a tool on PATH; StackSetupError naming how to get it otherwise."""
    found = shutil.which(name)
    if found is None:
        raise StackSetupError(f"{name} is not on PATH; {install_hint}")
    return found


def run_logged(
    argv: Sequence[str],
    log: Path,
    what: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> None:
    """Run argv (in cwd) with its output in log; StackSetupError with the log's tail if it
    fails."""
    with log.open("wb") as out:
        done = subprocess.run(
            list(argv), stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, check=False
        )
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise StackSetupError(f"{what} failed; see {log}:\n{tail}")


def installed(target: Path, version: str, product: Path) -> bool:
    """Whether product exists and target's stamp names version (see `mark_installed`)."""
    stamp = target / ".version"
    return stamp.exists() and stamp.read_text() == version and product.exists()


def mark_installed(target: Path, version: str) -> None:
    (target / ".version").write_text(version)
