"""The stack as a whole: which services exist, and bringing them up and down."""

from __future__ import annotations

from collections.abc import Iterable

from schemas.errors import ConfigError
from stack.clickhouse import ClickHouse
from stack.fetch import fetch
from stack.kafka import Kafka
from stack.process import Service, Status
from stack.registry import Registry
from stack.settings import StackSettings

# Start order; stop runs in reverse.
SERVICES: tuple[type[Service], ...] = (Kafka, Registry, ClickHouse)
NAMES = tuple(cls.name for cls in SERVICES)


def select(settings: StackSettings, names: Iterable[str] = NAMES) -> list[Service]:
    wanted = set(names)
    unknown = wanted - set(NAMES)
    if unknown:
        raise ConfigError(f"unknown service(s) {sorted(unknown)}; choose from {list(NAMES)}")
    return [cls(settings) for cls in SERVICES if cls.name in wanted]


def up(settings: StackSettings, names: Iterable[str] = NAMES) -> list[Status]:
    """Fetch what is missing and start every service that is not running; idempotent."""
    fetch(settings)
    chosen = select(settings, names)
    for service in chosen:
        service.start()
    return [service.status() for service in chosen]


def down(settings: StackSettings, names: Iterable[str] = NAMES) -> None:
    for service in reversed(select(settings, names)):
        service.stop()


def status(settings: StackSettings) -> list[Status]:
    return [service.status() for service in select(settings)]
