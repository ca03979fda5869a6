"""Where the test services are, chosen explicitly, never by what happens to answer:

- the app's env vars, when all three of CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS,
  CDFBRIDGE_SCHEMA_REGISTRY__URL and CDFBRIDGE_CLICKHOUSE__URL are set (what
  `cdfbridge-stack env` prints);
- else CDFBRIDGE_TEST_SERVICES: `local` (the default: the local stack, started if needed) or
  `docker` (containers through testcontainers, from CDFBRIDGE_TEST_STACK_IMAGE, by default
  the image stack/docker/images.sh builds, so no registry is needed).

A Docker engine that answers changes nothing unless `docker` is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.settings import ConnectionSettings, SchemaRegistrySettings
from services.storage import StorageOnly, StorageSettings


class TestServices(BaseSettings):
    """CDFBRIDGE_TEST_*: which services the tests run against."""

    __test__ = False  # not a test class
    model_config = SettingsConfigDict(env_prefix="CDFBRIDGE_TEST_")

    services: Literal["local", "docker"] = "local"
    # Serves kafka, registry and clickhouse by command (`cdfbridge-stack serve NAME`).
    stack_image: str = "cdfbridge/stack-services:local"


@dataclass(frozen=True)
class Endpoints:
    kafka: str  # bootstrap servers, as the tests reach them
    registry: str  # Confluent-compatible API base URL, as the tests reach it
    clickhouse: str  # HTTP URL
    # The same services as ClickHouse itself reaches them (they differ inside Docker networks).
    kafka_for_clickhouse: str
    registry_for_clickhouse: str
    origin: str  # "env", "docker" or "local stack"
    # Stops and starts one service ("kafka", "registry", "clickhouse"), returning once it
    # answers again; only the local stack can (env services are not ours, see _containers).
    restart: Callable[[str], None] | None = field(default=None, compare=False)

    def registry_client(self) -> Any:
        """A SchemaRegistryClient configured as the stages configure theirs (timeouts too)."""
        from confluent_kafka.schema_registry import SchemaRegistryClient

        return SchemaRegistryClient(SchemaRegistrySettings(url=self.registry).client_config())


@contextmanager
def provide(choice: TestServices | None = None) -> Iterator[Endpoints]:
    """Yield endpoints of real services, starting them if needed, stopping what it started."""
    given = ConnectionSettings()
    choice = choice or TestServices()
    if _all_set(given):
        kafka, registry = given.kafka.bootstrap_servers, given.schema_registry.url
        yield Endpoints(kafka, registry, given.clickhouse.url, kafka, registry, "env")
    elif choice.services == "docker":
        with _containers(choice.stack_image) as endpoints:
            yield endpoints
    else:
        with _local_stack() as endpoints:
            yield endpoints


def _all_set(given: ConnectionSettings) -> bool:
    return (
        "bootstrap_servers" in given.kafka.model_fields_set
        and "url" in given.schema_registry.model_fields_set
        and "url" in given.clickhouse.model_fields_set
    )


@contextmanager
def _local_stack() -> Iterator[Endpoints]:
    from stack import services
    from stack.settings import StackSettings

    settings = StackSettings()
    already_up = {s.name for s in services.status(settings) if s.ready}
    services.up(settings)

    def restart(name: str) -> None:
        services.down(settings, [name])
        services.up(settings, [name])

    try:
        yield Endpoints(
            settings.kafka_bootstrap,
            settings.registry_url,
            settings.clickhouse_url,
            settings.kafka_bootstrap,
            settings.registry_url,
            "local stack",
            restart,
        )
    finally:
        services.down(settings, [n for n in services.NAMES if n not in already_up])


@contextmanager
def _containers(image: str) -> Iterator[Endpoints]:
    """Kafka, the registry and ClickHouse as containers on one network, each from image."""
    # Ryuk, testcontainers' reaper, is an image of its own that no registry may serve here;
    # the containers are stopped by the `with` below instead.
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.core.wait_strategies import HttpWaitStrategy

    from stack.kafka import Kafka
    from stack.settings import StackSettings
    from tests.conftest import free_port

    def serve(name: str, alias: str) -> Any:
        container = DockerContainer(image).with_network(network).with_network_aliases(alias)
        return container.with_command(f"cdfbridge-stack serve {name}")

    kafka_port = free_port()  # advertised to the tests, so known before the start
    with Network() as network:
        kafka = (
            serve("kafka", "kafka")
            .with_env("CDFBRIDGE_STACK_KAFKA_ADVERTISED_HOST", "kafka")
            .with_env("CDFBRIDGE_STACK_KAFKA_EXTERNAL", f"127.0.0.1:{kafka_port}")
            .with_bind_ports(29092, kafka_port)
        )
        registry = (
            serve("registry", "registry")
            .with_env("CDFBRIDGE_STACK_REGISTRY_PORT", "8080")
            .with_exposed_ports(8080)
            .waiting_for(HttpWaitStrategy(8080, "/apis/ccompat/v7/subjects"))
        )
        clickhouse = (
            serve("clickhouse", "clickhouse")
            .with_exposed_ports(8123)
            .waiting_for(HttpWaitStrategy(8123, "/ping"))
        )
        with kafka, registry, clickhouse:
            _wait_for(Kafka(StackSettings(kafka_port=kafka_port)).answers, "Kafka")
            # No restart: Docker gives a restarted container new random host ports
            # (moby/moby#31926), and the clients here hold the old ones.
            yield Endpoints(
                f"127.0.0.1:{kafka_port}",
                _url(registry, 8080) + "/apis/ccompat/v7",
                _url(clickhouse, 8123),
                "kafka:9092",
                "http://registry:8080/apis/ccompat/v7",
                "docker",
            )


def _wait_for(answers: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while not answers():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not answer within {timeout_s:.0f} s")
        time.sleep(0.5)


def _url(container: Any, port: int) -> str:
    return f"http://{container.get_container_host_ip()}:{container.get_exposed_port(port)}"


@dataclass(frozen=True)
class ObjectStore:
    storage: StorageSettings  # how every tool reaches it
    bucket: str
    origin: str  # "env" or "local stack"
    # Stops and starts the server, returning once it answers (local stack only).
    restart: Callable[[], None] | None = field(default=None, compare=False)

    def uri(self, prefix: str = "table") -> str:
        """A new table's URI, as Spark names it."""
        import uuid

        return f"s3a://{self.bucket}/{prefix}_{uuid.uuid4().hex[:10]}"

    def with_storage(self, **changes: Any) -> ObjectStore:
        """The same bucket reached with other settings (wrong keys, another endpoint)."""
        from dataclasses import replace

        return replace(self, storage=self.storage.model_copy(update=changes))

    def env(self) -> dict[str, str]:
        """CDFBRIDGE_STORAGE__* for a process of ours (secrets included, for it alone)."""
        found = {}
        for key, value in self.storage.model_dump(exclude_none=True).items():
            text = value.get_secret_value() if isinstance(value, SecretStr) else value
            found[f"CDFBRIDGE_STORAGE__{key.upper()}"] = (
                str(text).lower() if isinstance(text, bool) else str(text)
            )
        return found


@contextmanager
def object_store_provided() -> Iterator[ObjectStore]:
    from stack import services
    from stack.s3 import S3
    from stack.settings import StackSettings

    settings = StackSettings()
    given = StorageOnly().storage
    if given.endpoint:
        yield ObjectStore(given, settings.s3_bucket, "env")
        return
    started = not S3(settings).status().ready
    services.up(settings, ["s3"])
    access, secret = S3(settings).credentials()
    storage = StorageSettings(
        endpoint=settings.s3_url,
        path_style_access=True,
        allow_http=True,
        access_key_id=access,
        secret_access_key=secret,
    )

    def restart() -> None:
        services.down(settings, ["s3"])
        services.up(settings, ["s3"])

    try:
        yield ObjectStore(storage, settings.s3_bucket, "local stack", restart)
    finally:
        if started:
            services.down(settings, ["s3"])
