"""The producer's one typed settings model: env vars (CDFBRIDGE_*), a file, or CLI flags.

[spark] (SparkSection) is shared with cdfbridge-verify's Spark reader: services/spark_session.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from schemas.naming import REPLAYABLE, default_topic
from services.settings import ENV_PREFIX, ConnectionSettings, Section
from services.spark_session import SparkSection
from services.storage import StorageSettings
from services.tables import TableEntry, check_columns, comma_list, unique_topics


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
    # Kafka settings of a data topic we create. Compacted, a topic keeps the last change of
    # every key for good, so a rebuild or a new subscriber can always replay it whole;
    # {"cleanup.policy": "delete", "retention.ms": "-1"} keeps every change instead.
    topic_config: dict[str, str] = Field(default_factory=lambda: dict(REPLAYABLE))
    metrics_port: int | None = Field(default=9464, ge=0, le=65535)
    # Columns never published, and columns published as the SHA-256 hex of their value.
    exclude_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    hash_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # What a change the producer cannot follow does (a column dropped, renamed or retyped,
    # a vacuumed history): stop the table until `cdfbridge-producer resync`, or resync it.
    on_incompatible_change: Literal["stop", "resync"] = "stop"

    _lists = field_validator("primary_key", "exclude_columns", "hash_columns", mode="before")(
        comma_list
    )

    @model_validator(mode="after")
    def _consistent(self) -> SourceSection:
        if self.starting_version is not None and self.starting_timestamp is not None:
            raise ValueError("give --starting-version or --starting-timestamp, not both")
        check_columns(self.primary_key, self.exclude_columns, self.hash_columns, self.table)
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
    # Several tables through one Spark session: [[tables]] in the --config file, each laid
    # over [source] (services/tables.py).
    tables: list[TableEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _required(self) -> ProducerSettings:
        if self.tables:
            if self.source.table:
                raise ValueError(
                    "give one table (--table, CDFBRIDGE_SOURCE__TABLE) or [[tables]], not both"
                )
            unique_topics(self.tables)
            return self
        if not self.source.table:
            raise ValueError("no table: pass --table or set CDFBRIDGE_SOURCE__TABLE")
        if not self.source.primary_key:
            raise ValueError(
                "no primary key: pass --primary-key col[,col] or set CDFBRIDGE_SOURCE__PRIMARY_KEY"
            )
        return self

    def sources(self) -> list[SourceSection]:
        """Each table's settings: its [[tables]] entry over [source], else [source] alone."""
        if not self.tables:
            return [self.source]
        base = self.source.model_dump(exclude_unset=True)
        return [SourceSection(**{**base, **e.producer_overrides()}) for e in self.tables]
