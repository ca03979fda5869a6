"""The `[consumer]` section of the consumer's settings (CDFBRIDGE_CONSUMER__*, or [consumer]
in the --config file): which topics, into which tables, batch sizes, the ClickHouse-side
addresses of Kafka and the registry, metrics and rebuilds. consumer/settings.py puts it
together with the shared sections and [[tables]].
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from schemas.naming import default_table
from services.settings import Section
from services.tables import comma_list

# Keys of [consumer] that describe one table, and the [[tables]] key to use instead.
ONE_TABLE_KEYS = {
    "table": ("--table, CDFBRIDGE_CONSUMER__TABLE", "target"),
    "primary_key": ("CDFBRIDGE_CONSUMER__PRIMARY_KEY", "order_by"),
    "partition_by": ("CDFBRIDGE_CONSUMER__PARTITION_BY", "partition_by"),
    "lake_location": ("CDFBRIDGE_CONSUMER__LAKE_LOCATION", "table"),
}


class ConsumerSection(Section):
    topic: str = ""
    """The topic to read (one); see topics and topic_pattern for several."""
    topics: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Several topics, each into its own table with the defaults below ("a,b" or a list)."""
    topic_pattern: str = ""
    """A regular expression the whole topic name must match, expanded against the brokers'
    topics at start-up (*.progress and *.dlq side topics left out): a restart takes new
    ones."""
    group: str = "cdfbridge-consumer"
    """The consumer group; every group is an independent subscriber with its own offsets."""
    table: str = ""
    """Target table in ClickHouse (database from clickhouse.database); default: from the
    topic."""
    primary_key: list[str] = Field(default_factory=list)
    """ORDER BY columns; default: the fields of the `<topic>-key` schema."""
    partition_by: str = ""
    """PARTITION BY of the table when the consumer creates it (a ClickHouse expression)."""
    batch_rows: int = Field(default=100_000, gt=0)
    """A partition's batch is inserted once it holds this many rows."""
    batch_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    """... or this many bytes of values."""
    batch_seconds: float = Field(default=0.5, gt=0)
    """... or once its first row is this many seconds old."""
    prefetch_mb: float = Field(default=1024.0, gt=0)
    """Messages fetched ahead of the batches, for the whole process: every topic gets an
    equal share, split among its partitions (at most 128 MiB, at least 1 MiB each)."""
    write_threads: int = Field(default=8, gt=0)
    """Inserts into ClickHouse running at once, for the whole process. Each topic writes one
    batch at a time, in order, on a pool of this many threads that every topic shares."""
    deduplication_window: int = Field(default=10_000, gt=0)
    """How many recent insert blocks ClickHouse remembers to drop retried ones."""
    registry_url_for_clickhouse: str = ""
    """The registry URL as ClickHouse reaches it, when it differs from schema_registry.url."""
    kafka_for_clickhouse: str = ""
    """The brokers as ClickHouse's Kafka engine reaches them, when they differ."""
    kafka_sasl_mechanism_for_clickhouse: str = ""
    """The SASL mechanism of the Kafka engine, when it differs from kafka.sasl_mechanism:
    e.g. PLAIN (over SASL_SSL) for a ClickHouse whose librdkafka has no SCRAM, as chdb-
    core's."""
    metrics_port: int = Field(default=9465, ge=0, le=65535)
    """0 disables the /metrics and /health endpoint."""
    max_backoff_seconds: float = Field(default=30.0, gt=0)
    """The longest wait between retries while Kafka, the registry or ClickHouse is
    unavailable (the waits double from 0.5 s)."""
    rebuild: Literal["manual", "auto"] = "manual"
    """auto: rebuild a table by itself when its topic starts a new generation (a producer
    resync), from the lake where ClickHouse reads the Delta table, while the other topics
    flow; manual: `status` says to run `rebuild`."""
    kafka_engine_watch_seconds: float = Field(default=30.0, gt=0)
    """How often `kafka-engine-ddl --watch` applies every topic's Kafka-engine DDL again:
    the longest a schema change or a resync waits before ClickHouse's engine follows it."""
    lake_location: str = ""
    """Where ClickHouse reads the Delta table for a bootstrap from the lake, when it differs
    from the location the producer names in the topic's progress (one topic only)."""

    _lists = field_validator("topics", mode="before")(comma_list)

    @field_validator("topic_pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value!r} is not a regular expression ({exc}): fix it") from exc
        return value

    @property
    def names(self) -> list[str]:
        """The topics named: `topic`, then `topics`."""
        return ([self.topic] if self.topic else []) + self.topics

    @property
    def target_table(self) -> str:
        """`table`, else the topic without the `cdfbridge.` prefix, dots made underscores."""
        if self.table:
            return self.table
        return default_table(self.topic)
