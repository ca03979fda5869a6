"""A bench's registry subjects deleted once it ends, so that runs do not pile up in the
registry (its H2 file had kept 32,150 artifacts of earlier runs, and each registration
cost more under load)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schemas.naming import key_subject, value_subject
from services.registry_client import registry_client


def forget(client_config: dict[str, Any], topics: Iterable[str]) -> None:
    """The key and value subjects of topics, deleted for good; one never made is skipped."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = registry_client(client_config)
    for topic in topics:
        for subject in (key_subject(topic), value_subject(topic)):
            try:
                client.delete_subject(subject)
                client.delete_subject(subject, permanent=True)
            except SchemaRegistryError as exc:
                if exc.http_status_code != 404:
                    raise
