"""Session-wide real services and per-test names."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.endpoints import Endpoints, ObjectStore, object_store_provided, provide


def pytest_addoption(parser: pytest.Parser) -> None:
    faults = parser.getgroup("cdfbridge fault injection (-m faults)")
    faults.addoption(
        "--faults-large",
        action="store_true",
        help="run the fault suite at large scale: 300 commits of 20,000 rows, 5 kills each",
    )
    faults.addoption("--fault-seed", type=int, help="replay the fault schedule of an earlier run")


def free_port() -> int:
    """A loopback port nothing listens on once this returns."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def unique(prefix: str) -> str:
    """A name no other test or run uses: topics and databases are never shared."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture(autouse=True)
def _root_handlers() -> Iterator[None]:
    """The root logger's handlers as they were: a command's main() run in a test sets its
    own, on a captured stream that is closed once the test ends."""
    handlers, level = list(logging.root.handlers), logging.root.level
    yield
    logging.root.handlers[:] = handlers
    logging.root.setLevel(level)


@pytest.fixture(scope="session")
def endpoints() -> Iterator[Endpoints]:
    with provide() as found:
        yield found


@pytest.fixture(scope="session")
def kafka_admin(endpoints: Endpoints) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": endpoints.kafka})


@pytest.fixture
def topic_factory(kafka_admin: Any) -> Iterator[Callable[..., str]]:
    """Creates uniquely named topics and deletes them after the test."""
    from confluent_kafka.admin import NewTopic

    created: list[str] = []

    def create(partitions: int = 3, **config: str) -> str:
        name = unique("topic")
        futures = kafka_admin.create_topics([NewTopic(name, partitions, 1, config=config)])
        futures[name].result(timeout=30)
        created.append(name)
        _wait_for_metadata(kafka_admin, name, partitions)
        return name

    yield create
    if created:
        for future in kafka_admin.delete_topics(created).values():
            future.result(timeout=30)


def _wait_for_metadata(admin: Any, topic: str, partitions: int) -> None:
    """CreateTopics returns before every broker's metadata cache has the topic."""
    deadline = time.monotonic() + 30
    while len(admin.list_topics(topic, timeout=10).topics[topic].partitions) < partitions:
        assert time.monotonic() < deadline, f"topic {topic} not in metadata after 30 s"
        time.sleep(0.1)


@pytest.fixture(scope="session")
def clickhouse(endpoints: Endpoints) -> Any:
    import clickhouse_connect

    return clickhouse_connect.get_client(dsn=endpoints.clickhouse)


@pytest.fixture
def ch_database(clickhouse: Any) -> Iterator[str]:
    """A fresh ClickHouse database for one test."""
    name = unique("test")
    clickhouse.command(f"CREATE DATABASE `{name}`")
    yield name
    clickhouse.command(f"DROP DATABASE IF EXISTS `{name}` SYNC")


@pytest.fixture(scope="session")
def registry(endpoints: Endpoints) -> Any:
    return endpoints.registry_client()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One SparkSession for the whole run; starting it takes seconds."""
    from services.spark_session import build_spark_session
    from stack.fetch import fetch, lib_dir
    from stack.settings import StackSettings

    logging.getLogger("py4j").setLevel(logging.WARNING)  # it logs from __del__ after the run
    settings = StackSettings()
    fetch(settings, ("spark",))
    session = build_spark_session("cdfbridge-tests", delta_jars=lib_dir(settings, "spark"))
    yield session
    session.stop()


@pytest.fixture
def delta_path(tmp_path: Path) -> str:
    return str(tmp_path / "delta_table")


@pytest.fixture(scope="session")
def object_store() -> Iterator[ObjectStore]:
    """An S3 server with a bucket for tables: CDFBRIDGE_STORAGE__* when they name an endpoint,
    else the local stack's MinIO (built on first use, which takes minutes)."""
    with object_store_provided() as store:
        yield store


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[str]:
    """The URL of a standalone Spark master with one worker, from the local stack."""
    from stack import services
    from stack.settings import StackSettings

    settings = StackSettings()
    names = ("spark-master", "spark-worker")
    already_up = {s.name for s in services.status(settings) if s.ready}
    services.up(settings, names)
    yield settings.spark_master_url
    services.down(settings, [n for n in names if n not in already_up])


@pytest.fixture(scope="session")
def clickhouse_cluster() -> Iterator[tuple[str, ...]]:
    """The HTTP URLs of the local cluster's two shards (`cdfbridge-stack up cluster`)."""
    from stack import services
    from stack.cluster import NAMES
    from stack.settings import StackSettings

    settings = StackSettings()
    already_up = {s.name for s in services.status(settings) if s.ready}
    services.up(settings, NAMES)
    yield tuple(settings.shard_url(n) for n in (1, 2))
    services.down(settings, [n for n in NAMES if n not in already_up])


@pytest.fixture
def cluster_database(clickhouse_cluster: tuple[str, ...]) -> Iterator[str]:
    name = unique("cluster")
    from tests.integration.cluster_support import shard_clients

    shards = shard_clients(clickhouse_cluster)
    for shard in shards:
        shard.command(f"CREATE DATABASE `{name}`")
    yield name
    for shard in shards:
        shard.command(f"DROP DATABASE IF EXISTS `{name}` SYNC")
