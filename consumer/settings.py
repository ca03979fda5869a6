"""The consumer's settings: the shared connection sections, a `consumer` section
(consumer/section.py), and the `[[tables]]` of a config file both stages read
(services/tables.py).

Read from CDFBRIDGE_* env vars (CDFBRIDGE_CONSUMER__TOPIC, ...) and, optionally, a TOML file
given with --config ([consumer], [kafka], [clickhouse] ... and [[tables]]; the other
stages' sections are left to them); unknown keys are rejected, secrets are SecretStr.

Which topics: `topic` and `topics` (--topic, repeatable) name them; [[tables]] and
`topic_pattern` describe them. Names alone are the list. With tables or a pattern as well,
the names pick among what those describe (`--topic NAME rebuild`). Without names, every
[[tables]] entry's topic, and each topic the pattern matches at start-up (consumer/topics.py).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, ValidationError, model_validator

from consumer.section import ONE_TABLE_KEYS, ConsumerSection
from schemas.errors import ConfigError
from schemas.target import Target
from services.settings import ConnectionSettings
from services.storage import StorageSettings
from services.tables import TableEntry, own_sections, unique_topics


class ConsumerSettings(ConnectionSettings):
    """Everything `cdfbridge-consumer` reads, validated once at start-up."""

    consumer: ConsumerSection
    tables: list[TableEntry] = Field(default_factory=list)
    """Several tables' topics: [[tables]] in the --config file (the producer reads it too)."""
    storage: StorageSettings = Field(default_factory=StorageSettings)
    """Where the Delta tables live, for ClickHouse to read them in a bootstrap from the lake."""

    @model_validator(mode="after")
    def _topics(self) -> ConsumerSettings:
        c, tables = self.consumer, unique_topics(self.tables)
        twice = sorted({name for name in c.names if c.names.count(name) > 1})
        if twice:
            raise ValueError(f"topic {', '.join(twice)} is listed twice: list each topic once")
        if not c.names and not tables and not c.topic_pattern:
            raise ValueError(
                "no topic: pass --topic (repeatable) or set CDFBRIDGE_CONSUMER__TOPIC; for "
                "several, consumer.topics, consumer.topic_pattern or [[tables]] in --config"
            )
        in_tables = {entry.topic_name for entry in tables}
        strangers = [n for n in c.names if n not in in_tables and not self._matches(n)]
        if (tables or c.topic_pattern) and strangers:
            raise ValueError(
                f"topic {', '.join(strangers)} is neither in [[tables]] nor matched by "
                "consumer.topic_pattern: check the name, or add it to the config file"
            )
        if self.by_pattern or len(self.listed()) > 1:
            for key, (where, entry_key) in ONE_TABLE_KEYS.items():
                if getattr(c, key):
                    raise ValueError(
                        f"consumer.{key} ({where}) is for one topic, and {self.described()} "
                        f"are configured: drop it, and set `{entry_key}` in each [[tables]] entry"
                    )
        return self

    @property
    def by_pattern(self) -> bool:
        """True when topic_pattern adds topics at start-up (no topic is named)."""
        return bool(self.consumer.topic_pattern) and not self.consumer.names

    def listed(self) -> list[str]:
        """The topics named, else those of [[tables]] (topic_pattern's come at start-up)."""
        return self.consumer.names or [entry.topic_name for entry in self.tables]

    def described(self) -> str:
        """The configured topics, for messages: `topics a, b` or the pattern."""
        found = f"topics {', '.join(self.listed())}" if self.listed() else ""
        if self.by_pattern:
            pattern = f"the topics matching {self.consumer.topic_pattern!r}"
            return f"{found} and {pattern}" if found else pattern
        return found

    def for_topic(self, topic: str, topics: int = 1) -> ConsumerSettings:
        """One topic's settings: its [[tables]] entry (if any) over [consumer], with its share
        of prefetch_mb when the process reads `topics` topics."""
        c = self.consumer
        update: dict[str, Any] = {"topic": topic, "topics": [], "topic_pattern": ""}
        update["prefetch_mb"] = c.prefetch_mb / topics
        entry = next((e for e in self.tables if e.topic_name == topic), None)
        if entry is not None:
            update["table"] = c.table or entry.target_table
            update["primary_key"] = c.primary_key or entry.order_by
            update["partition_by"] = c.partition_by or entry.partition_by
        section = c.model_copy(update=update)
        return self.model_copy(update={"consumer": section, "tables": []})

    def one(self, command: str) -> ConsumerSettings:
        """The settings of the one topic configured; ConfigError when there are several."""
        if self.by_pattern or len(self.listed()) != 1:
            raise ConfigError(
                f"{command} acts on one topic, and {self.described()} are configured: "
                "pass --topic NAME to choose one"
            )
        return self.for_topic(self.listed()[0])

    def target(self) -> Target:
        """The topic's ClickHouse table (on a cluster, its Distributed table)."""
        c = self.clickhouse
        return Target(c.database, self.consumer.target_table, c.cluster)

    def kafka_for_clickhouse(self) -> str:
        return self.consumer.kafka_for_clickhouse or self.kafka.bootstrap_servers

    def registry_url_for_clickhouse(self) -> SecretStr:
        """With the registry's basic-auth credentials in it, if any."""
        return self.schema_registry.url_for_clickhouse(self.consumer.registry_url_for_clickhouse)

    def _matches(self, topic: str) -> bool:
        pattern = self.consumer.topic_pattern
        return bool(pattern) and re.fullmatch(pattern, topic) is not None


def load(
    config_file: Path | None = None, *, topic_flags: Sequence[str] | None = None, **overrides: Any
) -> ConsumerSettings:
    """Settings: CLI flags over the TOML file over env vars over defaults. `topic_flags` are
    the --topic flags: one sets `topic`, several set `topics`.

    Raises ConfigError naming every invalid key.
    """
    values: dict[str, Any] = {}
    if config_file is not None:
        try:
            values = tomllib.loads(config_file.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read settings file {config_file}: {exc}") from exc
    values = own_sections(values, ConsumerSettings)
    consumer = {
        **values.pop("consumer", {}),
        **{k: v for k, v in overrides.items() if v is not None},
    }
    if topic_flags:
        several = len(topic_flags) > 1
        consumer |= {
            "topic": "" if several else topic_flags[0],
            "topics": list(topic_flags) if several else [],
        }
    try:
        # Init values are deep-merged over env vars by pydantic-settings.
        return ConsumerSettings(**values, consumer=consumer)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: "
            f"{err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors(include_input=False, include_url=False)
        )
        raise ConfigError(f"invalid consumer settings: {problems}") from exc
