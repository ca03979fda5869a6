"""Where the test services are: the app's env vars, else containers when Docker answers,
else the local stack.

To use running services, set all three of CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS,
CDFBRIDGE_SCHEMA_REGISTRY__URL and CDFBRIDGE_CLICKHOUSE__URL (what `cdfbridge-stack env` prints).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from schemas.settings import ConnectionSettings, SchemaRegistrySettings
from schemas.storage import StorageOnly, StorageSettings


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
def provide() -> Iterator[Endpoints]:
    """Yield endpoints of real services, starting them if needed, stopping what it started."""
    given = ConnectionSettings()
    if _all_set(given):
        kafka, registry = given.kafka.bootstrap_servers, given.schema_registry.url
        yield Endpoints(kafka, registry, given.clickhouse.url, kafka, registry, "env")
    elif _docker_answers():
        with _containers() as endpoints:
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


def _docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:  # noqa: BLE001 - no client config, no socket, no daemon: all mean "no"
        return False
    return True


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
def _containers() -> Iterator[Endpoints]:
    from testcontainers.community.kafka import KafkaContainer
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.core.wait_strategies import HttpWaitStrategy

    with Network() as network:
        kafka = KafkaContainer("confluentinc/cp-kafka:8.1.0").with_kraft().with_network(network)
        kafka = kafka.with_network_aliases("kafka")
        registry = (
            DockerContainer("apicurio/apicurio-registry:3.3.3")
            .with_exposed_ports(8080)
            .with_network(network)
            .with_network_aliases("registry")
            .waiting_for(HttpWaitStrategy(8080, "/apis/ccompat/v7/subjects"))
        )
        clickhouse = (
            DockerContainer("clickhouse/clickhouse-server:26.9")
            .with_env("CLICKHOUSE_SKIP_USER_SETUP", "1")
            .with_exposed_ports(8123)
            .with_network(network)
            .waiting_for(HttpWaitStrategy(8123, "/ping"))
        )
        with kafka, registry, clickhouse:
            # No restart: Docker gives a restarted container new random host ports
            # (moby/moby#31926), and the clients here hold the old ones.
            yield Endpoints(
                kafka.get_bootstrap_server(),
                _url(registry, 8080) + "/apis/ccompat/v7",
                _url(clickhouse, 8123),
                "kafka:9092",
                "http://registry:8080/apis/ccompat/v7",
                "docker",
            )


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
