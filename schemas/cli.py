"""What the producer's and the checker's commands do with bad settings and with our errors:
one line on stderr naming the problem, a documented exit code, no traceback."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import ValidationError

from schemas.errors import CdfBridgeError, ConfigError, TransientError
from schemas.settings import describe

S = TypeVar("S")


def run_command(
    prog: str,
    settings_from: Callable[[], S],
    command: Callable[[S], int],
    codes: Sequence[tuple[type[CdfBridgeError], int]] = (),
) -> int:
    """Exit codes: 2 for settings, `codes` first, then 2 for other config errors (such as
    credentials a service refused), 3 for transient errors, else 1."""
    try:
        settings = settings_from()
    except ValidationError as exc:
        return _fail(prog, f"invalid settings:\n{describe(exc)}", 2)
    except (ValueError, OSError, tomllib.TOMLDecodeError) as exc:
        return _fail(prog, f"cannot read settings: {exc}", 2)
    try:
        return command(settings)
    except CdfBridgeError as exc:
        chosen: list[tuple[type[CdfBridgeError], int]] = [
            *codes,
            (ConfigError, 2),
            (TransientError, 3),
        ]
        return _fail(prog, str(exc), next((c for k, c in chosen if isinstance(exc, k)), 1))


def _fail(prog: str, message: str, code: int) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return code
