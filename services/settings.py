"""Connection settings both stages share, read from CDFBRIDGE_* env vars or a file.

Env vars use `__` between section and field: CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS.
Secrets are SecretStr: printing a settings object never shows them.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "CDFBRIDGE_"
log = logging.getLogger("cdfbridge.settings")
# librdkafka configuration, as confluent-kafka's clients take it.
KafkaConfig = dict[str, str | int | float | bool]
# The largest change a topic carries: Kafka's 1 MB default is less than one wide row with a
# document or an image in it; 8 MiB is also the most some managed Kafka services allow.
MAX_MESSAGE_BYTES = 8 * 2**20


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


@cache
def warn_unverified(section: str) -> None:
    """Once per process and service: TLS without verification is an explicit choice."""
    log.warning(
        "TLS certificate verification is OFF for %s (CDFBRIDGE_%s__TLS_VERIFY=false): "
        "anyone on the network path can impersonate it and read its credentials",
        section,
        section.upper(),
    )


class KafkaSettings(Section):
    bootstrap_servers: str = "127.0.0.1:9092"
    """The brokers, `host:port[,host:port...]`."""
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    """How clients reach the brokers: plain, TLS, SASL, or SASL over TLS."""
    sasl_mechanism: str | None = None
    """SASL mechanism with SASL_*: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER."""
    sasl_username: str | None = None
    """SASL user name."""
    sasl_password: SecretStr | None = None
    """SASL password."""
    ssl_ca_location: str | None = None
    """The CA bundle (PEM) that signed the brokers' certificates, when not the system's."""
    tls_verify: bool = True
    """Verify the brokers' certificates and host names (TLS); false only on purpose."""
    max_message_bytes: int = Field(default=MAX_MESSAGE_BYTES, ge=2**20, le=2**30)
    """The largest message (one change) the producer sends and the topics it creates accept
    (their max.message.bytes); the consumer and its dead-letter topic follow it."""
    transactional_id: str | None = Field(default=None, min_length=1, max_length=200)
    """The producer's transactional.id (and `<id>-backlog`), shared by all its tables. Two
    copies of one deployment must share it, so the newer fences the older. Default:
    `cdfbridge-<topic>` for one table, `cdfbridge-lake-<hash of the topics>` for [[tables]]."""
    properties: dict[str, str] = Field(default_factory=dict)
    """Any other librdkafka property, passed through as is (e.g. {"client.rack": "a"})."""

    def client_config(self) -> KafkaConfig:
        """librdkafka settings; holds the password in clear, so never log it."""
        config = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password.get_secret_value() if self.sasl_password else None,
            "ssl.ca.location": self.ssl_ca_location,
        }
        present: KafkaConfig = {k: v for k, v in config.items() if v is not None}
        if not self.tls_verify:
            warn_unverified("kafka")
            present |= {
                "enable.ssl.certificate.verification": False,
                "ssl.endpoint.identification.algorithm": "none",
            }
        return present | self.properties


# Tries per registry request: the client itself retries a transport error (no answer, a
# timeout) and 408/429/5xx, waiting a random part of 1, 2, 4 ... 20 s between tries.
REGISTRY_ATTEMPTS = 5


class SchemaRegistrySettings(Section):
    url: str = "http://127.0.0.1:8081/apis/ccompat/v7"
    """The Confluent-compatible registry API (Apicurio's is under /apis/ccompat/v7)."""
    basic_auth_user_info: SecretStr | None = None
    """`user:password` for HTTP basic auth."""
    timeout_s: float = Field(default=10.0, gt=0)
    """Seconds per request. The client waits forever without one, and a request the registry
    never answers would stall the stage; a timed-out request is retried."""
    ssl_ca_location: str | None = None
    """The CA bundle (PEM) that signed an https registry's certificate, when not the
    system's."""
    tls_verify: bool = True
    """Verify an https registry's certificate and host name; false only on purpose."""

    def client_config(self) -> dict[str, Any]:
        """confluent-kafka SchemaRegistryClient settings; holds secrets, never log it."""
        config: dict[str, Any] = {
            "url": self.url,
            "timeout": self.timeout_s,
            "max.retries": REGISTRY_ATTEMPTS - 1,
            "retries.wait.ms": 1_000,
            "retries.max.wait.ms": 20_000,
        }
        if self.basic_auth_user_info is not None:
            config["basic.auth.user.info"] = self.basic_auth_user_info.get_secret_value()
        if not self.tls_verify:
            warn_unverified("schema_registry")
            config["ssl.ca.location"] = False
        elif self.ssl_ca_location:
            config["ssl.ca.location"] = self.ssl_ca_location
        return config

    def url_for_clickhouse(self, url: str = "") -> SecretStr:
        """The registry's URL as ClickHouse's AvroConfluent format takes it (url, or this
        one): with the basic-auth user and password in it, which ClickHouse masks in its
        logs and in SHOW CREATE."""
        url = url or self.url
        parts = urlsplit(url)
        if self.basic_auth_user_info is None or "@" in parts.netloc:
            return SecretStr(url)
        user, _, password = self.basic_auth_user_info.get_secret_value().partition(":")
        user_info = f"{quote(user, safe='')}:{quote(password, safe='')}"
        return SecretStr(urlunsplit(parts._replace(netloc=f"{user_info}@{parts.netloc}")))


def masked_url(url: str, mask: str = "******") -> str:
    """url with the password in it (user:password@host) replaced by mask."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user_info, _, host = parts.netloc.rpartition("@")
    user = user_info.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:{mask}@{host}"))


class ClickHouseSettings(Section):
    url: str = "http://127.0.0.1:8123"
    """ClickHouse's HTTP(S) interface."""
    username: str = "default"
    """ClickHouse user."""
    password: SecretStr = SecretStr("")
    """ClickHouse password."""
    database: str = "default"
    """The database of the target tables (and of shadow tables a rebuild fills)."""
    ssl_ca_location: str | None = None
    """The CA bundle (PEM) that signed an https URL's certificate, when not the system's."""
    tls_verify: bool = True
    """Verify an https URL's certificate and host name; false only on purpose."""
    cluster: str = ""
    """A cluster of the server's remote_servers: each target is then a table on every shard
    (Replicated where the server has Keeper) behind a Distributed table of the target's
    name, sharded by the primary key's hash (docs/deployment.md)."""
    node_urls: list[str] = Field(default_factory=list)
    """Every server of `cluster`, as HTTP(S) URLs, where the server has no Keeper and so no
    ON CLUSTER: the consumer runs its DDL on each of them."""

    def tls(self) -> dict[str, Any]:
        """clickhouse-connect's TLS arguments."""
        if not self.tls_verify:
            warn_unverified("clickhouse")
            return {"verify": False}
        return {"ca_cert": self.ssl_ca_location} if self.ssl_ca_location else {}


class ConnectionSettings(BaseSettings):
    """Where Kafka, the schema registry and ClickHouse are."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    schema_registry: SchemaRegistrySettings = Field(default_factory=SchemaRegistrySettings)
    clickhouse: ClickHouseSettings = Field(default_factory=ClickHouseSettings)


def env_vars(model: type[BaseSettings]) -> list[str]:
    """Every env var a settings model reads, e.g. CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS."""
    prefix = str(model.model_config.get("env_prefix", ""))
    delimiter = str(model.model_config.get("env_nested_delimiter") or "__")
    names: list[str] = []
    for field, info in model.model_fields.items():
        section = info.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            names += [f"{prefix}{field}{delimiter}{sub}".upper() for sub in section.model_fields]
        else:
            names.append(f"{prefix}{field}".upper())
    return names


def describe(error: ValidationError) -> str:
    """A settings error as `field: problem` lines, never echoing the values (secrets)."""
    lines = []
    for item in error.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "settings"
        lines.append(f"  {where}: {item['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)
