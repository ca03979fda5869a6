"""`cdfbridge-verify` settings: the shared connections plus a `verify` section
(CDFBRIDGE_VERIFY__TABLE, ...), from flags, a TOML file or env vars."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from schemas.column_policy import ColumnPolicy
from schemas.naming import default_table, default_topic
from services.settings import ConnectionSettings, Section
from services.spark_session import SparkSection
from services.storage import StorageSettings
from services.tables import TableEntry, check_columns, comma_list
from verify.routes import Choice


class VerifySection(Section):
    table: str = Field(default="", description="Delta table path or URI, as the producer reads it")
    topic: str = ""
    """default: derived from the table, as the producer derives it"""
    clickhouse_table: str = ""
    """default: derived from the topic, as the consumer derives it"""
    primary_key: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """default: ORDER BY"""
    version: int | None = Field(default=None, ge=0)
    """default: the last published version"""
    latest: bool = False
    """Compare at the table's latest version instead; with wait_seconds, until it arrives."""
    wait_seconds: float = Field(default=0.0, ge=0)
    """retry until equal, for a catching-up consumer"""
    storage_options: dict[str, str] = Field(default_factory=dict)
    """delta-rs object-store options, over those [storage] gives."""
    reader: Choice = "auto"
    """auto: delta-rs, or Spark for reader features delta-rs is not known to read
    (routes.py)."""
    exclude_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """The producer's column policy: columns it leaves out, and columns it publishes hashed."""
    hash_columns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Columns the producer publishes hashed (its hash_columns): the Delta side is compared
    as their SHA-256."""

    as_of: bool = False
    """Compare as of the last version the consumer group has consumed whole, leaving out
    the keys changed since (verify/asof.py): works while the pipeline runs."""
    group: str = "cdfbridge-consumer"
    """The consumer group that fills the table (a Kafka-engine table's group, for one):
    whose committed offsets tell which version the table holds whole."""
    repair: bool = False
    """After an as-of round that finds lost, extra or wrong keys, write the Delta table's
    rows for them (verify/repair.py), then compare again."""
    watch: bool = False
    """Compare every table in turn, forever, as of its consumed version, with metrics."""
    interval_seconds: float = Field(default=60.0, gt=0)
    """--watch: the least time between two rounds of one table."""
    slices: int = Field(default=1, ge=1, le=1024)
    """--watch: the key buckets are split into this many slices, one a round; a table is
    covered whole every `slices` rounds."""
    metrics_port: int = Field(default=9466, ge=0, le=65535)
    """--watch: /metrics and /health (0: none)."""
    stale_seconds: float = Field(default=900.0, gt=0)
    """--watch: /health names a table whose group has not consumed a Delta commit this old
    (cdfbridge_verify_lag_seconds); an idle table, with no newer commit, is never stale."""

    _lists = field_validator("primary_key", "exclude_columns", "hash_columns", mode="before")(
        comma_list
    )

    @model_validator(mode="after")
    def _consistent(self) -> VerifySection:
        check_columns(self.primary_key, self.exclude_columns, self.hash_columns, self.table)
        if self.latest and self.version is not None:
            raise ValueError("give --version or --latest, not both")
        return self

    @property
    def column_policy(self) -> ColumnPolicy:
        return ColumnPolicy.of(self.exclude_columns, self.hash_columns)

    @property
    def topic_name(self) -> str:
        return self.topic or default_topic(self.table)

    @property
    def target_table(self) -> str:
        return self.clickhouse_table or default_table(self.topic_name)


class VerifySettings(ConnectionSettings):
    verify: VerifySection = Field(default_factory=VerifySection)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    spark: SparkSection = Field(default_factory=SparkSection)
    """the Spark reader's session"""
    tables: list[TableEntry] = Field(default_factory=list)
    """The lake's tables, as the producer and the consumer read them (services/tables.py)."""

    @model_validator(mode="after")
    def _table_given(self) -> VerifySettings:
        if not self.verify.table and not self.tables:
            raise ValueError(
                "no Delta table: pass --table, set CDFBRIDGE_VERIFY__TABLE, or give a --config "
                "file with [[tables]]"
            )
        return self

    def each(self) -> list[VerifySettings]:
        """The settings of each table to compare: --table alone (with its topic, target and
        column policy from [[tables]] when it is listed there), else every [[tables]] entry.
        Flags and [verify] win over an entry."""
        if not self.verify.table:
            return [self._for(entry) for entry in self.tables]
        entry = next((e for e in self.tables if e.table == self.verify.table), None)
        return [self if entry is None else self._for(entry)]

    def _for(self, entry: TableEntry) -> VerifySettings:
        listed = {
            "table": entry.table,
            "topic": entry.topic,
            "clickhouse_table": entry.target,
            "exclude_columns": entry.exclude_columns,
            "hash_columns": entry.hash_columns,
        }
        section = VerifySection(**{**listed, **self.verify.model_dump(exclude_unset=True)})
        return self.model_copy(update={"verify": section, "tables": []})

    @property
    def storage_options(self) -> dict[str, str]:
        """delta-rs options for the table: [storage]'s, then --storage-option's."""
        return {**self.storage.delta_rs_options(), **self.verify.storage_options}
