"""Names derived from a table: topic, registry subjects, side topics."""

from __future__ import annotations

import re

TOPIC_PREFIX = "cdfbridge."
_TOPIC_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def default_topic(table: str) -> str:
    """`cdfbridge.<name>`: the last path segment of a path or URI, or the catalog name.

    `s3://lake/sales/orders/` → `cdfbridge.orders`; `main.sales.orders` → `cdfbridge.main.sales.orders`
    """
    is_path = "/" in table or "\\" in table
    name = table.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] if is_path else table
    return TOPIC_PREFIX + _TOPIC_CHARS.sub("_", name)


def default_table(topic: str) -> str:
    """The ClickHouse table a topic fills: `cdfbridge.sales.orders` → `sales_orders`."""
    return topic.removeprefix(TOPIC_PREFIX).replace(".", "_")


def key_subject(topic: str) -> str:
    """Subject of the key schema (Confluent TopicNameStrategy)."""
    return f"{topic}-key"


def value_subject(topic: str) -> str:
    return f"{topic}-value"


def progress_topic(topic: str) -> str:
    """Compacted topic holding the last Delta version fully published to `topic`."""
    return f"{topic}.progress"


def dlq_topic(topic: str) -> str:
    """Where a consumer puts messages it cannot decode or insert."""
    return f"{topic}.dlq"


# The Kafka header of a tombstone (a null value after a delete, with `tombstones = true`): the
# delete's own value message, byte for byte. Compaction removes the delete record before its
# tombstone; a reader that resumes behind the log cleaner reads the delete from here.
DELETE_HEADER = "cdfbridge.delete"

# With tombstones, a topic the producer creates keeps every record uncompacted for a day at
# least (unless topic_config says otherwise): a reader that cannot read headers, such as
# ClickHouse's Kafka engine, stays exact while it lags less than that.
TOMBSTONE_COMPACTION_LAG = {"min.compaction.lag.ms": str(24 * 3600 * 1000)}

# The data topic's Kafka settings when the producer creates it: replayable to the start of
# every generation for as long as it lives (a compacted topic keeps each key's last change).
REPLAYABLE = {"cleanup.policy": "compact"}
