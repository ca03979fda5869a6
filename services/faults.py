"""Fault points: named steps of an operation that protects data, where a test can kill the
process (SIGKILL, as the kernel's OOM killer or `kill -9` would) to prove that what the
step leaves behind is read right on restart.

A point is armed by naming it in CDFBRIDGE_FAULT_POINT (e.g. `rebuild.swapped`); nothing
is armed by default, and an unarmed point costs one comparison.
"""

from __future__ import annotations

import os
import signal
from functools import cache

from pydantic_settings import BaseSettings, SettingsConfigDict


class _Armed(BaseSettings):
    """CDFBRIDGE_FAULT_POINT: the step to be killed at; empty for none."""

    model_config = SettingsConfigDict(env_prefix="CDFBRIDGE_FAULT_", extra="ignore")

    point: str = ""


@cache
def _armed() -> str:
    return _Armed().point


def reach(point: str) -> None:
    """Kill this process here if `point` is armed."""
    if _armed() == point:
        os.kill(os.getpid(), signal.SIGKILL)
