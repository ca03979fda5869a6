"""The producer's one typed settings model: env vars (CDFBRIDGE_*), a file, or CLI flags.

[spark] (SparkSection) is shared with cdfbridge-verify's Spark reader: schemas/spark_session.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from schemas.naming import default_topic
from schemas.settings import ENV_PREFIX, ConnectionSettings, Section
from schemas.spark_session import SparkSection
from schemas.storage import StorageSettings


class SourceSection(Section):
    table: str = Field(default="", description="Delta table path/URI or catalog name")
    primary_key: Annotated[list[str], NoDecode] = Field(default_factory=list)  # "a,b" or a list
    topic: str = ""  # default: derived from the table
    starting_version: int | None = Field(default=None, ge=0)
    starting_timestamp: datetime | None = None
    snapshot: bool = False
    until_version: int | None = Field(default=None, ge=0)
    poll_interval_s: float = Field(default=1.0, gt=0)
    max_rows_per_chunk: int = Field(default=500_000, gt=0)
    # Encoded changes a chunk (or a slice of one huge commit) may hold in the driver at once.
    max_bytes_per_chunk: int = Field(default=128 * 2**20, gt=0)
    max_versions_per_chunk: int = Field(default=100, gt=0)
    include_preimage: bool = False
    tombstones: bool = False
    partitions: int = Field(default=3, gt=0, description="partitions of a topic we create")
    metrics_port: int | None = Field(default=9464, ge=0, le=65535)

    @field_validator("primary_key", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        if isinstance(value, str) and not value.lstrip().startswith("["):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _one_start(self) -> SourceSection:
        if self.starting_version is not None and self.starting_timestamp is not None:
            raise ValueError("give --starting-version or --starting-timestamp, not both")
        return self

    @property
    def topic_name(self) -> str:
        return self.topic or default_topic(self.table)


class ProducerSettings(ConnectionSettings):
    """Everything `cdfbridge-producer` reads; validated before anything starts."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True
    )

    spark: SparkSection = Field(default_factory=SparkSection)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    source: SourceSection = Field(default_factory=SourceSection)

    @model_validator(mode="after")
    def _required(self) -> ProducerSettings:
        if not self.source.table:
            raise ValueError("no table: pass --table or set CDFBRIDGE_SOURCE__TABLE")
        if not self.source.primary_key:
            raise ValueError(
                "no primary key: pass --primary-key col[,col] or set CDFBRIDGE_SOURCE__PRIMARY_KEY"
            )
        return self
