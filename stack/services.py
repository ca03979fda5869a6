"""The stack as a whole: which services exist, and bringing them up and down."""

from __future__ import annotations

import shutil
from collections.abc import Iterable

from schemas.errors import ConfigError
from stack.azure import Azure
from stack.clickhouse import ClickHouse
from stack.cluster import Shard1, Shard2
from stack.errors import StackSetupError
from stack.fetch import fetch
from stack.kafka import Kafka
from stack.process import Service, Status
from stack.registry import Registry
from stack.s3 import S3
from stack.settings import StackSettings
from stack.spark_cluster import SparkMaster, SparkWorker
from stack.tls_proxy import TlsProxy

# Start order; stop runs in reverse.
SERVICES: tuple[type[Service], ...] = (
    Kafka,
    Registry,
    ClickHouse,
    Shard1,
    Shard2,
    TlsProxy,
    S3,
    Azure,
    SparkMaster,
    SparkWorker,
)
NAMES = tuple(cls.name for cls in SERVICES)
# Names that stand for several services.
GROUPS = {"cluster": (Shard1.name, Shard2.name)}
SECURE_ONLY = frozenset(cls.name for cls in SERVICES if cls.secure_only)
# What `up` starts when no service is named: the pipeline's own. The object stores (MinIO's
# first build takes minutes) and a standalone Spark cluster only when named:
# `up s3 azure spark-master spark-worker`; a ClickHouse cluster of two shards: `up cluster`.
# The secured stack (--secure) adds its TLS proxy to them.
DEFAULT = ("kafka", "registry", "clickhouse", "tls-proxy")


def select(settings: StackSettings, names: Iterable[str] = NAMES) -> list[Service]:
    """The services named, in start order; the secured stack's own only when secure."""
    wanted = {member for name in names for member in GROUPS.get(name, (name,))}
    unknown = wanted - set(NAMES)
    if unknown:
        choices = [*NAMES, *GROUPS]
        raise ConfigError(f"unknown service(s) {sorted(unknown)}; choose from {choices}")
    return [
        cls(settings)
        for cls in SERVICES
        if cls.name in wanted and (settings.secure or not cls.secure_only)
    ]


def up(settings: StackSettings, names: Iterable[str] = DEFAULT) -> list[Status]:
    """Fetch what is missing and start every service that is not running; idempotent."""
    chosen = select(settings, names)
    fetch(settings, ("spark", *(need for service in chosen for need in service.needs)))
    for service in chosen:
        service.start()
    return [service.status() for service in chosen]


def down(settings: StackSettings, names: Iterable[str] = NAMES, *, wipe: bool = False) -> None:
    """Stop the services named; `wipe`: then delete each one's directory under the stack's
    home (its data, log and generated config), so that it starts empty. Jars and binaries
    (the home's lib/) and the secured stack's secrets stay."""
    for service in reversed(select(settings, names)):
        service.stop()
        if wipe:
            try:
                shutil.rmtree(service.dir)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StackSetupError(f"cannot delete {service.dir}: {exc}") from exc


def status(settings: StackSettings) -> list[Status]:
    """The default services, and any other that runs."""
    chosen = select(settings)
    return [s.status() for s in chosen if s.name in DEFAULT or s.pid() is not None]
