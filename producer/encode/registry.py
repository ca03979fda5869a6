"""Registering the key and value schemas of a topic, and following additive evolution.

The registry client retries a request that got no answer or a 408/429/5xx itself
(`max.retries`, services/settings.py); what still fails after its tries is named here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from producer.encode.encode import WireSchema
from producer.encode.evolution import bare, check_additive
from producer.errors import SchemaChangeError
from schemas.changes import GENERATION
from schemas.naming import key_subject, value_subject
from services.registry_client import registry_client
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
        # A new generation (producer/resync/resync.py): its first schemas replace the topic's,
        # whatever they are, since its consumers rebuild from the generation's start.
        self.new_generation = False
        # The value schema id the generation's progress record names, compared with after a
        # restart instead of the subject's latest (schemas/progress.py `value_schema`).
        self.carried_value: int | None = None
        # Told each value schema id registered, for the progress records (producer/lake/table.py).
        self.registered: Callable[[int], None] = lambda schema_id: None
        # The generation the values carry (schemas/changes.py), and whether they do.
        self.generation = 0
        self._carries_generation: bool | None = None

    @classmethod
    def connect(cls, registry: SchemaRegistrySettings, topic: str, table: str) -> TopicSchemas:
        """The topic's schemas in the registry the settings name, through the process's one
        client for those settings: each client holds its own TLS context and connection
        pool (about 0.9 MB), and a lake's tables share the registry."""
        config = registry.client_config()
        attempts = int(config["max.retries"]) + 1
        return cls(registry_client(config), registry.url, topic, table, attempts)

    def use(self, key: dict[str, Any], value: dict[str, Any], version: int) -> None:
        """Register key and value (idempotent), refusing value changes that are not additive."""
        if self.key and self.value and (self.key.schema, self.value.schema) == (key, value):
            return
        old_key, old_value = (None, None) if self.new_generation else self._carried()
        if old_value is not None and old_value.schema != value:
            check_additive(old_value.schema, value, self.table, version)
        if old_key is not None and bare(old_key.schema) != bare(key):
            raise SchemaChangeError(self.table, version, "the primary-key columns changed type")
        # The schemas the topic was published with are registered, each subject's level set
        # too (both came before its first chunk): a restart registers nothing again. Ones a
        # process registered but published nothing with may lack the level: registered again.
        settled = old_value is not None and (
            self.value is not None or old_value.schema_id == self.carried_value
        )
        self.key = (
            old_key
            if settled and old_key is not None and old_key.schema == key
            else self._register(key_subject(self.topic), key, version)
        )
        self.value = (
            old_value
            if settled and old_value is not None and old_value.schema == value
            else self._register(value_subject(self.topic), value, version)
        )
        self.new_generation = False
        self.registered(self.value.schema_id)

    def carries_generation(self) -> bool:
        """Whether the values carry `_generation`: in every generation this release starts,
        and in one it follows whose schema has it. A generation started before keeps the
        shape of its schema to its end (schemas/changes.py)."""
        if self._carries_generation is None:
            carried = None if self.new_generation else self._carried()[1]
            names = {f["name"] for f in carried.schema["fields"]} if carried is not None else None
            self._carries_generation = names is None or GENERATION in names
        return self._carries_generation

    def _carried(self) -> tuple[WireSchema | None, WireSchema | None]:
        """The key and value schemas the topic carries: the last ones used, else, after a
        restart, the value schema the progress record names (the subject's latest when it
        names none) and the key subject's latest. The registry alone would take a renamed or
        dropped column for a BACKWARD-compatible change (the old field is ignored, the new
        one null)."""
        if self.key is not None and self.value is not None:
            return self.key, self.value
        value = self._by_id(self.carried_value) if self.carried_value is not None else None
        if value is None:
            value = self._latest(value_subject(self.topic))
        return self._latest(key_subject(self.topic)), value

    def _by_id(self, schema_id: int) -> WireSchema | None:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            registered = self._call(self.client.get_schema, schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:  # a registry that lost it: the latest then
                return None
            raise
        return WireSchema(json.loads(registered.schema_str), schema_id)

    def _latest(self, subject: str) -> WireSchema | None:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            # Asked each time: the client keeps get_latest_version's answers for good, and
            # a table started again in this process may have registered since.
            registered = self._call(self.client.get_version, subject, "latest")
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:  # a new topic: nothing registered yet
                return None
            raise
        return WireSchema(json.loads(registered.schema.schema_str), int(registered.schema_id))

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
