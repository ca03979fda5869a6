"""What every command (producer, consumer, checker) does with bad settings and with errors:
one line on stderr naming the problem, a documented exit code, no traceback."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable, Sequence
from typing import TypeVar

from confluent_kafka import KafkaException
from pydantic import ValidationError

from schemas.errors import CdfBridgeError, ConfigError, TransientError
from services.kafka_access import check_access
from services.kafka_errors import describe as describe_kafka
from services.kafka_errors import error_of, passing
from services.settings import ConnectionSettings, describe

S = TypeVar("S")


def run_command(
    prog: str,
    settings_from: Callable[[], S],
    command: Callable[[S], int],
    codes: Sequence[tuple[type[CdfBridgeError], int]] = (),
) -> int:
    """Exit codes: 2 for settings, `codes` first, then 2 for other config errors (such as
    credentials a service refused), 3 for transient errors, else 1. A KafkaException that
    escaped unwrapped is sorted by its code: 3 when a retry can pass, 1 when fatal or not."""
    try:
        settings = settings_from()
    except ConfigError as exc:
        return _fail(prog, str(exc), 2)
    except ValidationError as exc:
        return _fail(prog, f"invalid settings:\n{describe(exc)}", 2)
    except (ValueError, OSError, tomllib.TOMLDecodeError) as exc:
        return _fail(prog, f"cannot read settings: {exc}", 2)
    try:
        if isinstance(settings, ConnectionSettings):
            check_access(settings.kafka)  # refused credentials or certificate: exit 2 at once
        return command(settings)
    except CdfBridgeError as exc:
        return _fail(prog, str(exc), exit_code(exc, codes))
    except KafkaException as exc:
        error = error_of(exc)
        return _fail(prog, f"Kafka failed: {describe_kafka(error)}", 3 if passing(error) else 1)


def exit_code(exc: CdfBridgeError, codes: Sequence[tuple[type[CdfBridgeError], int]] = ()) -> int:
    chosen: list[tuple[type[CdfBridgeError], int]] = [*codes, (ConfigError, 2), (TransientError, 3)]
    return next((code for kind, code in chosen if isinstance(exc, kind)), 1)


def _fail(prog: str, message: str, code: int) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return code
