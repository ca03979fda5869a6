"""A restart registers nothing the topic was published with (producer/encode/registry.py):
the schemas its progress record names are used by their ids, and each subject keeps the
level its first registration set. A process that registered but published nothing (killed
between the two) registers again, so each subject's level is set."""

from __future__ import annotations

import json
from typing import Any

import pytest

from producer.encode.registry import COMPATIBILITY, TopicSchemas
from schemas.naming import key_subject, value_subject
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration
KEY = {"type": "record", "name": "k", "fields": [{"name": "id", "type": "long"}]}
VALUE = {
    "type": "record",
    "name": "v",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]}],
}


class Writes:
    """The registry's client, its writes counted (each passed on to the registry)."""

    def __init__(self, client: Any) -> None:
        self.client, self.calls = client, list[str]()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.client, name)
        if name not in ("register_schema", "set_compatibility"):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return found(*args, **kwargs)

        return counted


def _start(registry: Any, endpoints: Endpoints, topic: str, carried: int | None) -> Writes:
    writes = Writes(registry)
    schemas = TopicSchemas(writes, endpoints.registry, topic, "table")
    schemas.carried_value = carried
    schemas.use(KEY, VALUE, version=1)
    assert schemas.key is not None and schemas.value is not None
    assert json.loads(json.dumps(schemas.value.schema)) == VALUE
    return writes


def test_a_restart_registers_nothing_it_published_with(registry: Any, endpoints: Endpoints) -> None:
    topic = unique("restarted")
    first = _start(registry, endpoints, topic, None)
    assert first.calls.count("register_schema") == 2
    assert first.calls.count("set_compatibility") == 2
    published = registry.get_version(value_subject(topic), "latest").schema_id

    again = _start(registry, endpoints, topic, published)  # its progress names the schema
    assert again.calls == []
    for subject in (key_subject(topic), value_subject(topic)):
        assert registry.get_compatibility(subject) == COMPATIBILITY
        assert len(registry.get_versions(subject)) == 1


def test_a_restart_after_a_registration_with_nothing_published_registers_again(
    registry: Any, endpoints: Endpoints
) -> None:
    topic = unique("unpublished")
    registry.register_schema(key_subject(topic), _schema(KEY))  # as a process killed before
    registry.register_schema(value_subject(topic), _schema(VALUE))  # it set the levels

    again = _start(registry, endpoints, topic, None)  # no progress record names a schema
    assert again.calls.count("set_compatibility") == 2
    for subject in (key_subject(topic), value_subject(topic)):
        assert registry.get_compatibility(subject) == COMPATIBILITY


def _schema(schema: dict[str, Any]) -> Any:
    from confluent_kafka.schema_registry import Schema

    return Schema(json.dumps(schema), "AVRO")
