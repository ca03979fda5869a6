"""Value and key schemas from the registry, by id or by subject, cached, errors wrapped.

The registry client retries a request itself (`max.retries`, `retries.wait.ms`: see
SchemaRegistrySettings.client_config); what still fails is sorted here: not found → None,
unreachable (its HTTP package httpx2 raising a TransportError) or 5xx → transient.
"""

from __future__ import annotations

import json
from typing import Any

import fastavro
import httpx2
from confluent_kafka.schema_registry.error import SchemaRegistryError

from consumer.group.errors import NotPublishedYetError, RegistryUnavailableError
from schemas.avro_names import delta_name
from schemas.naming import key_subject, value_subject
from services.registry_client import registry_client
from services.registry_errors import (
    failure_cause,
    misconfigured,
    not_found,
    refused,
    unavailable,
)
from services.tls_errors import TlsError, tls_failure

MAGIC = 0
HEADER = 5  # magic byte + 4-byte big-endian schema id


def schema_id(value: bytes) -> int | None:
    """The schema id of a Confluent-framed value, or None when it is not framed."""
    if len(value) < HEADER or value[0] != MAGIC:
        return None
    return int.from_bytes(value[1:HEADER], "big")


class Schemas:
    """Registry look-ups the consumer needs: not found → None, unreachable → transient error,
    refused credentials or a URL that is no registry → ConfigError, else terminal."""

    def __init__(self, client_config: dict[str, Any]) -> None:
        self._client = registry_client(client_config)  # the process's one for the settings
        self.url = str(client_config.get("url", "?"))
        self._by_id: dict[int, dict[str, Any] | None] = {}
        self._parsed: dict[int, Any] = {}
        self._keys: dict[str, list[str]] = {}  # a topic's key fields, as first found

    def by_id(self, schema_id: int) -> dict[str, Any] | None:
        if schema_id not in self._by_id:
            found = self._call(lambda: self._client.get_schema(schema_id))
            self._by_id[schema_id] = None if found is None else json.loads(found.schema_str)
        return self._by_id[schema_id]

    def parsed(self, schema_id: int) -> Any:
        """The fastavro-parsed writer schema, or None when the registry does not know the id."""
        if schema_id not in self._parsed:
            schema = self.by_id(schema_id)
            self._parsed[schema_id] = None if schema is None else fastavro.parse_schema(schema)
        return self._parsed[schema_id]

    def topic_value(self, topic: str, named: int | None) -> tuple[int, dict[str, Any]]:
        """The value schema the topic's generation publishes with: the one its progress
        record names (`named`, schemas/progress.py), else the subject's latest."""
        schema = None if named is None else self.by_id(named)
        if schema is None or named is None:
            return self.latest_value(topic)
        return named, schema

    def latest_value(self, topic: str) -> tuple[int, dict[str, Any]]:
        # Asked each time (get_version, not get_latest_version, which the process's shared
        # client would answer from its cache for good): a new schema shows at once.
        found = self._call(lambda: self._client.get_version(value_subject(topic), "latest"))
        if found is None:
            raise NotPublishedYetError(
                f"the registry has no subject {value_subject(topic)} yet: the producer has not "
                "published to this topic; start it, or check the topic name"
            )
        schema = json.loads(found.schema.schema_str)
        self._by_id.setdefault(found.schema_id, schema)
        return found.schema_id, schema

    def key_fields(self, topic: str) -> list[str] | None:
        """The key schema's fields, asked once: a table's set-up needs them for its ORDER BY
        and for its sharding key."""
        if topic not in self._keys:
            found = self._call(lambda: self._client.get_version(key_subject(topic), "latest"))
            if found is None:
                return None
            fields = json.loads(found.schema.schema_str)["fields"]
            self._keys[topic] = [delta_name(field) for field in fields]
        return self._keys[topic]

    def order_by(self, topic: str, configured: list[str]) -> list[str]:
        """The table's ORDER BY: the configured columns, else the key schema's fields."""
        found = configured or self.key_fields(topic)
        if not found:
            raise NotPublishedYetError(
                f"no key schema under {key_subject(topic)} yet to order the table by: start the "
                "producer, check the topic name, or set CDFBRIDGE_CONSUMER__PRIMARY_KEY"
            )
        return found

    def shard_by(self, topic: str, configured: list[str]) -> list[str]:
        """A cluster's sharding key: the key schema's fields (never more columns, so all of
        a key's changes reach one shard), else the ORDER BY."""
        return self.key_fields(topic) or self.order_by(topic, configured)

    def _call(self, request: Any) -> Any:
        try:
            return request()
        except SchemaRegistryError as exc:
            if not_found(exc):
                return None
            if unavailable(exc):
                raise RegistryUnavailableError(
                    f"schema registry failed: {failure_cause(exc)}"
                ) from exc
            raise misconfigured(exc, self.url) or refused(exc, self.url, "a look-up") from exc
        except httpx2.TransportError as exc:
            failure = tls_failure(exc)
            if failure is not None:
                raise TlsError("the schema registry", self.url, "schema_registry", failure) from exc
            raise RegistryUnavailableError(f"schema registry unreachable: {exc}") from exc
