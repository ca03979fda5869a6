"""The lake's tables as one config file lists them for both stages: `[[tables]]`.

    [source]                      # defaults for every table the producer follows
    poll_interval_s = 1.0

    [[tables]]
    table = "s3a://lake/sales/orders"
    primary_key = ["order_id"]
    exclude_columns = ["internal_notes"]   # never published
    hash_columns = ["email"]               # published as SHA-256 hex, computed in Spark
    target = "orders"                      # the consumer's ClickHouse table
    order_by = ["order_id", "day"]         # ORDER BY, default: the primary key
    partition_by = "toYYYYMM(day)"

An entry's producer keys override `[source]` for that table; `target`, `order_by` and
`partition_by` are the consumer's. Each table keeps its own topic, so its own transactional
id, progress record, subjects, dead-letter topic and ClickHouse table.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_settings import NoDecode

from schemas.naming import default_table, default_topic
from services.settings import Section

# Keys of an entry that the consumer reads; every other one is the producer's.
CONSUMER_KEYS = frozenset({"target", "order_by", "partition_by"})
# Sections of a config file that only some stages read: one file serves every stage.
STAGE_SECTIONS = frozenset({"source", "spark", "storage", "consumer", "verify"})


def comma_list(value: object) -> object:
    """ "a,b" → ["a", "b"]; a list or a JSON list is left to pydantic."""
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class TableEntry(Section):
    """One table of `[[tables]]`: unset keys take the stage's defaults."""

    table: str = Field(min_length=1, description="Delta table path/URI or catalog name")
    primary_key: Annotated[list[str], NoDecode] = Field(min_length=1)
    """Key columns (`"a,b"` or a list); a change's Kafka key."""
    topic: str = ""
    """The table's topic; default: `cdfbridge.<last path segment or catalog name>`."""
    starting_version: int | None = Field(default=None, ge=0)
    """As [source] starting_version, for this table."""
    starting_timestamp: datetime | None = None
    """As [source] starting_timestamp, for this table."""
    snapshot: bool | None = None
    """As [source] snapshot, for this table."""
    until_version: int | None = Field(default=None, ge=0)
    """As [source] until_version, for this table."""
    max_rows_per_chunk: int | None = Field(default=None, gt=0)
    """As [source] max_rows_per_chunk, for this table."""
    max_bytes_per_chunk: int | None = Field(default=None, gt=0)
    """As [source] max_bytes_per_chunk, for this table."""
    include_preimage: bool | None = None
    """As [source] include_preimage, for this table."""
    tombstones: bool | None = None
    """As [source] tombstones, for this table."""
    partitions: int | None = Field(default=None, gt=0)
    """As [source] partitions, for this table's topic."""
    exclude_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Columns never published (the producer's, and verify's, which leaves them out of the
    comparison)."""
    hash_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Columns published as the SHA-256 hex of their value (verify hashes the Delta side
    alike)."""
    on_incompatible_change: Literal["stop", "resync"] | None = None
    """As [source] on_incompatible_change, for this table."""
    target: str = ""
    """The consumer's ClickHouse table for this topic; default: the topic without
    `cdfbridge.`, dots made underscores."""
    order_by: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """The consumer's ORDER BY for this table (must hold every primary-key column); default:
    the primary key."""
    partition_by: str = ""
    """The consumer's PARTITION BY for this table when it creates it."""

    _lists = field_validator(
        "primary_key", "exclude_columns", "hash_columns", "order_by", mode="before"
    )(comma_list)

    @model_validator(mode="after")
    def _consistent(self) -> TableEntry:
        check_columns(self.primary_key, self.exclude_columns, self.hash_columns, self.table)
        if self.order_by and not set(self.primary_key) <= set(self.order_by):
            missing = ", ".join(c for c in self.primary_key if c not in self.order_by)
            raise ValueError(
                f"table {self.table}: order_by must hold every primary-key column "
                f"(missing {missing}): ReplacingMergeTree keeps one row per ORDER BY value"
            )
        return self

    @property
    def topic_name(self) -> str:
        return self.topic or default_topic(self.table)

    @property
    def target_table(self) -> str:
        return self.target or default_table(self.topic_name)

    def producer_overrides(self) -> dict[str, Any]:
        """The producer keys this entry sets, to lay over `[source]`."""
        return {
            key: value
            for key, value in self.model_dump(exclude_unset=True).items()
            if key not in CONSUMER_KEYS
        }


def own_sections(values: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """A config file's values without the sections of other stages; any other key the model
    does not know is still refused by it (a typo fails at start-up)."""
    return {k: v for k, v in values.items() if k in model.model_fields or k not in STAGE_SECTIONS}


def check_columns(
    primary_key: list[str], exclude: list[str], hashed: list[str], table: str
) -> None:
    """Raise ValueError naming columns that are both left out and hashed, or keys among them."""
    both = sorted(set(exclude) & set(hashed))
    if both:
        raise ValueError(
            f"table {table}: columns {both} are both excluded and hashed; keep one of the two"
        )
    keys = sorted(set(primary_key) & (set(exclude) | set(hashed)))
    if keys:
        raise ValueError(
            f"table {table}: primary-key columns {keys} cannot be excluded or hashed: the key "
            "identifies each row in Kafka and ClickHouse"
        )


def unique_topics(entries: list[TableEntry]) -> list[TableEntry]:
    """entries, or ValueError naming a topic that two of them would share."""
    topics = [entry.topic_name for entry in entries]
    for topic in topics:
        if topics.count(topic) > 1:
            tables = ", ".join(e.table for e in entries if e.topic_name == topic)
            raise ValueError(
                f"tables {tables} would all publish to topic {topic}: give each its own `topic`"
            )
    return entries
