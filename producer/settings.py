"""The producer's one typed settings model: env vars (CDFBRIDGE_*), a file, or CLI flags.

[spark] (SparkSection) is shared with cdfbridge-verify's Spark reader: services/spark_session.py.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from schemas.naming import REPLAYABLE, TOMBSTONE_COMPACTION_LAG, default_topic
from services.settings import ENV_PREFIX, ConnectionSettings, Section
from services.spark_session import SparkSection
from services.storage import StorageSettings
from services.tables import TableEntry, check_columns, comma_list, unique_topics


class SourceSection(Section):
    table: str = Field(default="", description="Delta table path/URI or catalog name")
    primary_key: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Key columns (`"a,b"` or a list); a change's Kafka key. Required."""
    topic: str = ""
    """The table's topic; default: `cdfbridge.<last path segment or catalog name>`."""
    starting_version: int | None = Field(default=None, ge=0)
    """The first version to publish when the topic has no progress yet; default: the table's
    first."""
    starting_timestamp: datetime | None = None
    """The first commit at or after this ISO time, instead of starting_version."""
    snapshot: bool = False
    """Publish the table's state at starting_version (default: latest) as
    `_change_type=snapshot` first, then follow changes: for a table whose Change Data Feed
    was enabled late, or whose history was vacuumed."""
    until_version: int | None = Field(default=None, ge=0)
    """Stop after publishing this version (a backfill); unset: follow forever."""
    poll_interval_s: float = Field(default=0.5, gt=0)
    """Seconds between looks at the table's head after a new commit."""
    idle_poll_max_s: float = Field(default=1.0, gt=0)
    """While the table stays idle, the looks grow apart, the wait doubling from
    poll_interval_s up to this; a new commit sets it back. A commit to an idle table waits
    for the next look: up to this long. Set it to poll_interval_s to poll at one pace."""
    max_rows_per_chunk: int = Field(default=500_000, gt=0)
    """Changes per Kafka transaction at most; a larger single version is cut in key-hash
    slices."""
    max_bytes_per_chunk: int = Field(default=128 * 2**20, gt=0)
    """Encoded changes a chunk (or a slice of one huge commit) may hold in the driver at
    once."""
    max_versions_per_chunk: int = Field(default=100, gt=0)
    """Delta versions per chunk at most."""
    include_preimage: bool = False
    """Publish every update's preimage as `update_preimage`; without it, only a preimage
    whose update moved the row to another key is published, as a delete of the old key."""
    tombstones: bool = False
    """Send a null value after each delete, so that compaction removes deleted keys from the
    topic. It carries the delete in a header (schemas/README.md); a topic created for it
    keeps records uncompacted for a day unless topic_config sets min.compaction.lag.ms."""
    partitions: int = Field(default=3, gt=0, description="partitions of a topic we create")
    topic_config: dict[str, str] = Field(default_factory=lambda: dict(REPLAYABLE))
    """Kafka settings of a data topic we create. Compacted, a topic keeps the last change of
    every key for good, so a rebuild or a new subscriber can always replay it whole;
    {"cleanup.policy": "delete", "retention.ms": "-1"} keeps every change instead."""
    metrics_port: int | None = Field(default=9464, ge=0, le=65535)
    """Port of the Prometheus /metrics endpoint; 0 or unset: none."""
    exclude_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Columns never published: left out of the value schema and of every message."""
    hash_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Columns published as the lowercase hex SHA-256 of their value, computed in Spark."""
    read_commit_files: bool = True
    """Read a path table's new commits from their own data files through Spark, where
    that gives the rows Delta's change-feed reader gives (producer/read/file_read.py): 38% less
    Spark time a read in a cycle of 80 tables; false: Delta's reader reads every change."""
    on_incompatible_change: Literal["stop", "resync"] = "stop"
    """What a change the producer cannot follow does (a column dropped, renamed or retyped, a
    vacuumed history, the table created again at its path): stop the table until
    `cdfbridge-producer resync`, or resync it."""

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
    def created_topic_config(self) -> dict[str, str]:
        """The Kafka settings of the data topic, when the producer creates it."""
        lag = TOMBSTONE_COMPACTION_LAG if self.tombstones else {}
        return {**lag, **self.topic_config}

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
    tables: list[TableEntry] = Field(default_factory=list)
    """Several tables through one Spark session: [[tables]] in the --config file, each laid
    over [source] (services/tables.py)."""

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

    def transactional_id(self) -> str:
        """[kafka] transactional_id, else one that the same tables always get: a copy of
        the deployment started again fences the one before (producer/publish/takeover.py)."""
        if self.kafka.transactional_id:
            return self.kafka.transactional_id
        if not self.tables:
            return f"cdfbridge-{self.source.topic_name}"  # the id a table has always had
        topics = "\n".join(sorted(source.topic_name for source in self.sources()))
        return f"cdfbridge-lake-{hashlib.sha256(topics.encode()).hexdigest()[:16]}"

    def sources(self) -> list[SourceSection]:
        """Each table's settings: its [[tables]] entry over [source], else [source] alone."""
        if not self.tables:
            return [self.source]
        base = self.source.model_dump(exclude_unset=True)
        return [SourceSection(**{**base, **e.producer_overrides()}) for e in self.tables]
