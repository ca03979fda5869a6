"""The shipped alert rules, tested by promtool (monitoring/prometheus-rules.test.yml): an
idle table raises nothing, and a stalled consumer, a stalled producer, a drift, duplicate
keys and failing rounds each raise their alert. promtool is a binary, not a service:
`cdfbridge-stack fetch promtool` (make setup) puts it in the stack's lib directory."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from stack.promtool import binary
from stack.settings import StackSettings

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"


def _promtool() -> str:
    fetched = binary(StackSettings())
    found = str(fetched) if fetched.is_file() else shutil.which("promtool")
    assert found, f"no promtool at {fetched} nor on PATH: run `cdfbridge-stack fetch promtool`"
    return found


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_promtool(), *args], cwd=MONITORING, capture_output=True, text=True, check=False
    )


def test_the_rules_pass_promtools_check() -> None:
    done = _run("check", "rules", "prometheus-rules.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_rules_raise_what_their_tests_expect_and_nothing_on_an_idle_table() -> None:
    done = _run("test", "rules", "prometheus-rules.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
