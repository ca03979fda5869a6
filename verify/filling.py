"""Which consumer group fills a table, so that a round compares at the version it holds.

A Kafka-engine table is filled by the group its Kafka table reads with, which changes at
every schema evolution and engine rebuild (`<group>-clickhouse-<schema id>`): the Kafka
table's comment names it, and while an evolve has dropped that table, the target's mark
does (services/table_marks.py). Any other table is filled by the configured group
(`--group`, the consumer's `consumer.group`).
"""

from __future__ import annotations

from typing import Any

from schemas.target import Target
from services.clickhouse_errors import sorted_errors
from services.table_marks import built_from, marked


def filling_group(client: Any, target: Target, configured: str, url: str | None) -> str:
    """The group whose committed offsets say what `target` holds."""
    with sorted_errors(url):
        built = built_from(client, target)
        if built is not None and built.group:
            return built.group
        return marked(client, target).engine_group or configured
