"""Registering the key and value schemas of a topic, and following additive evolution."""

from __future__ import annotations

import json
from typing import Any

from producer.encode import WireSchema
from producer.errors import SchemaChangeError
from schemas.naming import key_subject, value_subject

COMPATIBILITY = "BACKWARD"


class TopicSchemas:
    """The wire schemas of one topic, registered under <topic>-key and <topic>-value."""

    def __init__(self, client: Any, topic: str, table: str) -> None:
        self.client = client
        self.topic = topic
        self.table = table
        self.key: WireSchema | None = None
        self.value: WireSchema | None = None

    def use(self, key: dict[str, Any], value: dict[str, Any], version: int) -> None:
        """Register key and value (idempotent), refusing value changes that are not additive."""
        if self.key and self.value and (self.key.schema, self.value.schema) == (key, value):
            return
        if self.value is not None and self.value.schema != value:
            check_additive(self.value.schema, value, self.table, version)
        if self.key is not None and self.key.schema != key:
            raise SchemaChangeError(self.table, version, "the primary-key columns changed type")
        self.key = self._register(key_subject(self.topic), key, version)
        self.value = self._register(value_subject(self.topic), value, version)

    def _register(self, subject: str, schema: dict[str, Any], version: int) -> WireSchema:
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            schema_id = self.client.register_schema(subject, Schema(json.dumps(schema), "AVRO"))
        except SchemaRegistryError as exc:
            if exc.http_status_code == 409:  # incompatible with what the topic already carries
                raise SchemaChangeError(
                    self.table, version, f"{subject}: {exc.error_message}"
                ) from exc
            raise
        self.client.set_compatibility(subject_name=subject, level=COMPATIBILITY)
        return WireSchema(schema, int(schema_id))


def check_additive(old: dict[str, Any], new: dict[str, Any], table: str, version: int) -> None:
    """New may only add nullable fields to old; anything else needs a resync."""
    before = {f["name"]: f["type"] for f in old["fields"]}
    after = {f["name"]: f for f in new["fields"]}
    dropped = sorted(set(before) - set(after))
    if dropped:
        raise SchemaChangeError(table, version, f"columns {dropped} were dropped or renamed")
    retyped = sorted(name for name, kind in before.items() if after[name]["type"] != kind)
    if retyped:
        raise SchemaChangeError(table, version, f"columns {retyped} changed type")
    required = sorted(n for n, f in after.items() if n not in before and "default" not in f)
    if required:
        raise SchemaChangeError(table, version, f"new columns {required} are not nullable")
