"""The consumer's settings: the shared connection sections plus a `consumer` section.

Read from CDFBRIDGE_* env vars (CDFBRIDGE_CONSUMER__TOPIC, ...) and, optionally, a TOML
file given with --config ([consumer], [kafka], [clickhouse] ... tables); unknown keys are rejected, secrets are SecretStr.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from schemas.errors import ConfigError
from schemas.naming import default_table
from schemas.settings import ConnectionSettings, Section


class ConsumerSection(Section):
    topic: str = ""
    # The consumer group; every group is an independent subscriber with its own offsets.
    group: str = "cdfbridge-consumer"
    # Target table in ClickHouse (database from clickhouse.database); default: from the topic.
    table: str = ""
    # ORDER BY columns; default: the fields of the `<topic>-key` schema.
    primary_key: list[str] = Field(default_factory=list)
    # PARTITION BY of the table when the consumer creates it (a ClickHouse expression).
    partition_by: str = ""
    batch_rows: int = Field(default=100_000, gt=0)
    batch_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    batch_seconds: float = Field(default=5.0, gt=0)
    # How many recent insert blocks ClickHouse remembers to drop retried ones.
    deduplication_window: int = Field(default=10_000, gt=0)
    # The registry URL as ClickHouse reaches it, when it differs from schema_registry.url.
    registry_url_for_clickhouse: str = ""
    # The brokers as ClickHouse's Kafka engine reaches them, when they differ.
    kafka_for_clickhouse: str = ""
    # 0 disables the /metrics and /health endpoint.
    metrics_port: int = Field(default=9465, ge=0, le=65535)
    max_backoff_seconds: float = Field(default=30.0, gt=0)

    @model_validator(mode="after")
    def _topic_given(self) -> ConsumerSection:
        if not self.topic:
            raise ValueError("no topic: set CDFBRIDGE_CONSUMER__TOPIC or pass --topic")
        return self

    @property
    def target_table(self) -> str:
        """`table`, else the topic without the `cdfbridge.` prefix, dots made underscores."""
        if self.table:
            return self.table
        return default_table(self.topic)


class ConsumerSettings(ConnectionSettings):
    """Everything `cdfbridge-consumer` reads, validated once at start-up."""

    consumer: ConsumerSection

    def kafka_for_clickhouse(self) -> str:
        return self.consumer.kafka_for_clickhouse or self.kafka.bootstrap_servers

    def registry_url_for_clickhouse(self) -> str:
        return self.consumer.registry_url_for_clickhouse or self.schema_registry.url


def load(config_file: Path | None = None, **overrides: Any) -> ConsumerSettings:
    """Settings: CLI flags over the TOML file over env vars over defaults.

    Raises ConfigError naming every invalid key.
    """
    values: dict[str, Any] = {}
    if config_file is not None:
        try:
            values = tomllib.loads(config_file.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read settings file {config_file}: {exc}") from exc
    consumer = {
        **values.pop("consumer", {}),
        **{k: v for k, v in overrides.items() if v is not None},
    }
    try:
        # Init values are deep-merged over env vars by pydantic-settings.
        return ConsumerSettings(**values, consumer=consumer)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid consumer settings: {problems}") from exc
