"""The documentation site as a reader gets it: built by mkdocs into a temporary directory,
served on loopback, and opened in headless Chromium (Debian's chromium and chromium-driver,
which `make setup` installs; no browser is downloaded)."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SETUP = "run make setup, which installs Debian's chromium and chromium-driver"


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built from this checkout, as `make docs` builds it (strict)."""
    target = tmp_path_factory.mktemp("site")
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(target)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"mkdocs build failed:\n{done.stdout}{done.stderr}"
    return target


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not the test's output."""


@pytest.fixture(scope="session")
def site_url(site: Path) -> Iterator[str]:
    """The site over HTTP on a free loopback port: material's scripts need an origin."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium through chromedriver, keeping every console message."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.fail(f"no {' or '.join(missing)} to open the docs site in: {SETUP}")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        pytest.fail(f"selenium is not installed ({exc}): run make setup")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    yield driver
    driver.quit()
