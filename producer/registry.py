"""Registering the key and value schemas of a topic, and following additive evolution.

The registry client retries a request that got no answer or a 408/429/5xx itself
(`max.retries`, services/settings.py); what still fails after its tries is named here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from producer.encode import WireSchema
from producer.errors import SchemaChangeError
from schemas.naming import key_subject, value_subject
from services.registry_errors import failure_cause, misconfigured, refused, unavailable
from services.service_errors import UnreachableError
from services.settings import REGISTRY_ATTEMPTS, SchemaRegistrySettings
from services.tls_errors import TlsError, tls_failure

COMPATIBILITY = "BACKWARD"
T = TypeVar("T")


class TopicSchemas:
    """The wire schemas of one topic, registered under <topic>-key and <topic>-value.

    `attempts` is how many tries the client makes per request (its max.retries + 1), as
    named when they are spent.
    """

    def __init__(
        self, client: Any, url: str, topic: str, table: str, attempts: int = REGISTRY_ATTEMPTS
    ) -> None:
        self.client, self.url = client, url
        self.topic, self.table = topic, table
        self.attempts = attempts
        self.key: WireSchema | None = None
        self.value: WireSchema | None = None
        # A new generation (producer/resync.py): its first schemas replace the topic's,
        # whatever they are, since its consumers rebuild from the generation's start.
        self.new_generation = False

    @classmethod
    def connect(cls, registry: SchemaRegistrySettings, topic: str, table: str) -> TopicSchemas:
        """The topic's schemas in the registry the settings name."""
        from confluent_kafka.schema_registry import SchemaRegistryClient

        config = registry.client_config()
        attempts = int(config["max.retries"]) + 1
        return cls(SchemaRegistryClient(config), registry.url, topic, table, attempts)

    def use(self, key: dict[str, Any], value: dict[str, Any], version: int) -> None:
        """Register key and value (idempotent), refusing value changes that are not additive."""
        if self.key and self.value and (self.key.schema, self.value.schema) == (key, value):
            return
        old_key, old_value = (None, None) if self.new_generation else self._carried()
        if old_value is not None and old_value != value:
            check_additive(old_value, value, self.table, version)
        if old_key is not None and bare(old_key) != bare(key):
            raise SchemaChangeError(self.table, version, "the primary-key columns changed type")
        self.key = self._register(key_subject(self.topic), key, version)
        self.value = self._register(value_subject(self.topic), value, version)
        self.new_generation = False

    def _carried(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The key and value schemas the topic carries: the last ones used, else, after a
        restart, the registry's latest. The registry alone would take a renamed or dropped
        column for a BACKWARD-compatible change (the old field is ignored, the new one null)."""
        if self.key is not None and self.value is not None:
            return self.key.schema, self.value.schema
        return self._latest(key_subject(self.topic)), self._latest(value_subject(self.topic))

    def _latest(self, subject: str) -> dict[str, Any] | None:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            registered = self._call(self.client.get_latest_version, subject)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:  # a new topic: nothing registered yet
                return None
            raise
        schema: dict[str, Any] = json.loads(registered.schema.schema_str)
        return schema

    def _register(self, subject: str, schema: dict[str, Any], version: int) -> WireSchema:
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        avro = Schema(json.dumps(schema), "AVRO")
        if self.new_generation:
            self._compatibility(subject, "NONE")  # BACKWARD again once registered
        try:
            schema_id = self._call(self.client.register_schema, subject, avro)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 409:  # incompatible with what the topic already carries
                detail = f"{subject}: {exc.error_message}"
                raise SchemaChangeError(self.table, version, detail) from exc
            raise refused(exc, self.url, f"registering {subject}") from exc
        self._compatibility(subject, COMPATIBILITY)
        return WireSchema(schema, int(schema_id))

    def _compatibility(self, subject: str, level: str) -> None:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            self._call(self.client.set_compatibility, subject_name=subject, level=level)
        except SchemaRegistryError as exc:
            raise refused(exc, self.url, f"setting {subject} to {level}") from exc

    def _call(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """call, once the client's own tries are spent: no answer or a server error raises
        UnreachableError, refused credentials and a URL that is no registry ConfigError, and
        its other answers (not found, incompatible) are left to the caller."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        from httpx2 import TransportError

        try:
            return call(*args, **kwargs)
        except SchemaRegistryError as exc:
            wrong = misconfigured(exc, self.url)
            if wrong is not None:
                raise wrong from exc
            if not unavailable(exc):
                raise
            failure: Exception = exc
            cause = failure_cause(exc)
        except TransportError as exc:
            tls = tls_failure(exc)
            if tls is not None:
                raise TlsError("the schema registry", self.url, "schema_registry", tls) from exc
            failure, cause = exc, str(exc)
        raise UnreachableError("the schema registry", self.url, self.attempts, cause) from failure


def check_additive(old: dict[str, Any], new: dict[str, Any], table: str, version: int) -> None:
    """New may only add nullable fields to old, at the top or at the end of a struct (in an
    array or a map too), or widen a column's type; anything else needs a resync."""
    before = {f["name"]: f["type"] for f in old["fields"]}
    after = {f["name"]: f for f in new["fields"]}
    dropped = sorted(set(before) - set(after))
    if dropped:
        raise SchemaChangeError(table, version, f"columns {dropped} were dropped or renamed")
    retyped = sorted(n for n, kind in before.items() if not extends(after[n]["type"], kind))
    if retyped:
        raise SchemaChangeError(table, version, f"columns {retyped} changed type")
    required = sorted(n for n, f in after.items() if n not in before and "default" not in f)
    if required:
        raise SchemaChangeError(table, version, f"new columns {required} are not nullable")


# Delta's type widenings that Avro reads as promotions (byte and short are Avro ints too).
PROMOTIONS = frozenset({("int", "long"), ("int", "double"), ("float", "double")})


def extends(new: Any, old: Any) -> bool:
    """Whether Avro type new is old, old widened (PROMOTIONS, a decimal with more digits on
    either side of the point), or old with nullable fields (default null) appended to its
    records, however deep: in unions, array items and map values."""
    if bare(new) == bare(old) or _widens(bare(new), bare(old)):
        return True
    if isinstance(new, list) and isinstance(old, list):
        return len(new) == len(old) and all(map(extends, new, old))
    if not (isinstance(new, dict) and isinstance(old, dict)) or new["type"] != old["type"]:
        return False
    if new["type"] == "array":
        return extends(new["items"], old["items"])
    if new["type"] == "map":
        return extends(new["values"], old["values"])
    if new["type"] != "record" or len(new["fields"]) < len(old["fields"]):
        return False
    kept, added = new["fields"][: len(old["fields"])], new["fields"][len(old["fields"]) :]
    return all(
        n["name"] == o["name"] and extends(n["type"], o["type"])
        for n, o in zip(kept, old["fields"], strict=True)
    ) and all("default" in f for f in added)


def _widens(new: Any, old: Any) -> bool:
    if isinstance(new, str) and isinstance(old, str):
        return (old, new) in PROMOTIONS
    decimal = isinstance(new, dict) and isinstance(old, dict)
    if not decimal or new.get("logicalType") != "decimal" or old.get("logicalType") != "decimal":
        return False
    scale, old_scale = new.get("scale", 0), old.get("scale", 0)
    return bool(scale >= old_scale and new["precision"] - scale >= old["precision"] - old_scale)


# What an Avro schema says about the bytes; properties such as connect.type or delta.name
# (added by later releases) and defaults are left out.
_STRUCTURE = ("type", "items", "values", "logicalType", "precision", "scale", "size", "symbols")


def bare(schema: Any) -> Any:
    """An Avro schema as far as writers and readers of its bytes are concerned."""
    if isinstance(schema, list):
        return [bare(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: bare(schema[key]) for key in _STRUCTURE if key in schema}
    if "fields" in schema:
        out["fields"] = [(f["name"], bare(f["type"])) for f in schema["fields"]]
    return out["type"] if list(out) == ["type"] else out  # {"type": "int"} is "int"
