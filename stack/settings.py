"""Typed settings of the local stack, read from CDFBRIDGE_STACK_* env vars."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The services have no authentication configured, so on a host they only bind to loopback;
# inside a container (`cdfbridge-stack serve`) they listen on the container's network.
LOOPBACK = "127.0.0.1"
# The secured stack (`--secure`) runs beside the plain one: its own state directory, and
# every port the settings do not name this much higher.
SECURE_PORT_SHIFT = 100
REGISTRY_API = "/apis/ccompat/v7"


class StackSettings(BaseSettings):
    """Where the stack keeps its state and which loopback ports it listens on."""

    model_config = SettingsConfigDict(
        env_prefix="CDFBRIDGE_STACK_", extra="forbid", use_attribute_docstrings=True
    )

    home: Path = Field(default=Path(".stack"), description="state directory: jars, data, logs")
    lib_dir: Path | None = None
    """Where the jars and binaries `fetch` gets go, when not <home>/lib (an image keeps them
    apart from the services' data)."""
    kafka_port: int = Field(default=9092, ge=1, le=65535)
    """Kafka's client port."""
    kafka_controller_port: int = Field(default=9093, ge=1, le=65535)
    """Kafka's KRaft controller port."""
    clickhouse_http_port: int = Field(default=8123, ge=1, le=65535)
    """ClickHouse's HTTP port."""
    clickhouse_tcp_port: int = Field(default=9000, ge=1, le=65535)
    """ClickHouse's native TCP port."""
    registry_port: int = Field(default=8081, ge=1, le=65535)
    """The schema registry's (Apicurio) API port."""
    registry_management_port: int = Field(default=8091, ge=1, le=65535)
    """Apicurio's management port."""
    s3_port: int = Field(default=9300, ge=1, le=65535)
    """MinIO's S3 port (`cdfbridge-stack up s3`)."""
    s3_bucket: str = Field(default="lake", pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
    """The bucket MinIO is started with."""
    azure_port: int = Field(default=10000, ge=1, le=65535)
    """delta-rs's emulator default"""
    azure_container: str = Field(default="lake", pattern=r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
    """The container Azurite is started with."""
    spark_master_port: int = Field(default=7077, ge=1, le=65535)
    """The local Spark master's port (`cdfbridge-stack up spark`)."""
    spark_master_ui_port: int = Field(default=8092, ge=1, le=65535)
    """The Spark master's web UI port."""
    spark_worker_ui_port: int = Field(default=8094, ge=1, le=65535)
    """The Spark worker's web UI port."""
    spark_worker_cores: int = Field(default=1, gt=0)
    """Cores the local Spark worker offers."""
    spark_worker_memory: str = Field(default="2g", pattern=r"^\d+[mg]$")
    """Memory the local Spark worker offers, e.g. 2g."""
    minio_binary: Path | None = None
    """A minio binary of one's own instead of building one with Go (`cdfbridge-stack fetch`)."""
    kafka_heap: str = Field(default="512m", pattern=r"^\d+[mg]$")
    """Kafka's JVM heap, e.g. 512m."""
    registry_heap: str = Field(default="384m", pattern=r"^\d+[mg]$")
    """The registry's JVM heap."""
    start_timeout_s: float = Field(default=180.0, gt=0)
    """Seconds a service may take to answer after it is started."""
    listen_host: str = LOOPBACK
    """Where the services listen; 0.0.0.0 only inside a container, whose ports the host
    publishes on its loopback (stack/docker/compose.local.yml)."""
    kafka_advertised_host: str = LOOPBACK
    """The host name Kafka gives clients for its listener (in a container: its service name),
    and an optional second listener for clients outside, advertised as HOST:PORT and bound
    to kafka_external_port."""
    kafka_external: str | None = Field(default=None, pattern=r"^[\w.-]+:\d{1,5}$")
    """A second Kafka listener for clients outside a container, advertised as HOST:PORT."""
    kafka_external_port: int = Field(default=29092, ge=1, le=65535)
    """The port the second listener binds."""
    secure: bool = False
    """The secured stack: Kafka over SASL_SSL (SCRAM-SHA-512), ClickHouse with a password and
    the registry with basic auth, both over TLS through a proxy (nginx) on these ports."""
    cluster_http_port: int = Field(default=8131, ge=1, le=65535)
    """The HTTP port of the cluster's first shard (`cdfbridge-stack up cluster`); shard n
    listens on this port + n - 1."""
    cluster_tcp_port: int = Field(default=9131, ge=1, le=65535)
    """The native TCP port of the cluster's first shard, which the Distributed table reaches
    the shards on; shard n listens on this port + n - 1."""
    clickhouse_https_port: int = Field(default=8443, ge=1, le=65535)
    """The secured stack's ClickHouse HTTPS port (through its TLS proxy)."""
    registry_https_port: int = Field(default=8444, ge=1, le=65535)
    """The secured stack's registry HTTPS port (through its TLS proxy)."""

    @field_validator("home", "lib_dir")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        return None if path is None else path.expanduser().resolve()

    @model_validator(mode="after")
    def _secure_apart(self) -> StackSettings:
        """The secured stack keeps its state in <home>/secure, shares the jars, and moves
        the ports not set explicitly out of the plain stack's way."""
        if self.secure and self.home.name != "secure":
            self.lib_dir = self.lib
            self.home = self.home / "secure"
            for name, field in type(self).model_fields.items():
                if (
                    name.endswith("_port")
                    and "https" not in name
                    and name not in self.model_fields_set
                ):
                    setattr(self, name, int(field.default) + SECURE_PORT_SHIFT)
        return self

    @property
    def lib(self) -> Path:
        return self.lib_dir or self.home / "lib"

    @property
    def kafka_bootstrap(self) -> str:
        return f"{LOOPBACK}:{self.kafka_port}"

    @property
    def clickhouse_url(self) -> str:
        """What clients use: through the TLS proxy in the secured stack."""
        if self.secure:
            return f"https://{LOOPBACK}:{self.clickhouse_https_port}"
        return self.clickhouse_plain_url

    @property
    def clickhouse_plain_url(self) -> str:
        return f"http://{LOOPBACK}:{self.clickhouse_http_port}"

    def shard_url(self, number: int) -> str:
        """The HTTP URL of the local cluster's shard `number` (1, 2)."""
        return f"http://{LOOPBACK}:{self.cluster_http_port + number - 1}"

    @property
    def s3_url(self) -> str:
        return f"http://{LOOPBACK}:{self.s3_port}"

    @property
    def spark_master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.spark_master_port}"

    @property
    def registry_url(self) -> str:
        """Base URL of the Confluent-compatible API clients use (through the TLS proxy in
        the secured stack)."""
        if self.secure:
            return f"https://{LOOPBACK}:{self.registry_https_port}{REGISTRY_API}"
        return self.registry_plain_url

    @property
    def registry_plain_url(self) -> str:
        return f"http://{LOOPBACK}:{self.registry_port}{REGISTRY_API}"
