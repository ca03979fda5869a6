"""The images the container tests run, built once per session by the script the README
gives (it starts dockerd, or installs it with apt-get, when no engine answers)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
IMAGES = ["bash", "stack/docker/images.sh"]


@pytest.fixture(scope="session")
def images() -> None:
    built = subprocess.run(IMAGES, cwd=ROOT, capture_output=True, text=True, check=False)
    if built.returncode == 3 and "no dockerd and no apt-get" in built.stderr:
        pytest.fail(
            f"the container tests need a Docker engine, and this machine cannot run one "
            f"({built.stderr.strip()}): install Docker, or leave them out with "
            "`.venv/bin/python -m pytest -m 'not containers'`",
            pytrace=False,
        )
    assert built.returncode == 0, f"{' '.join(IMAGES)} failed:\n{built.stdout}{built.stderr}"
