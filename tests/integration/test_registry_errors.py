"""The real registry's answers, as both stages name them: a URL that is no registry API is
a setting to fix, while a subject not registered yet is the registry's own answer."""

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from consumer.group.errors import NotPublishedYetError
from consumer.group.registry import Schemas
from producer.encode.registry import TopicSchemas
from schemas.naming import key_subject
from services.registry_errors import RegistryUrlError
from services.settings import SchemaRegistrySettings
from tests.conftest import unique
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration
KEY = {"type": "record", "name": "k", "fields": [{"name": "id", "type": "string"}]}


def wrong_url(endpoints: Endpoints) -> str:
    """The registry's server, at a path that serves no registry API (as when Apicurio's
    /apis/ccompat/v7 is left out)."""
    return f"{endpoints.registry.rstrip('/')}/not-the-api"


def test_the_consumer_names_a_url_that_is_no_registry(endpoints: Endpoints) -> None:
    url = wrong_url(endpoints)
    schemas = Schemas(SchemaRegistrySettings(url=url).client_config())

    with pytest.raises(RegistryUrlError, match=rf"{url} answered 404 .*/apis/ccompat/v7"):
        schemas.latest_value(unique("topic"))


def test_the_producer_names_a_url_that_is_no_registry(endpoints: Endpoints) -> None:
    url = wrong_url(endpoints)
    client = SchemaRegistrySettings(url=url).client_config()
    schemas = TopicSchemas(SchemaRegistryClient(client), url, unique("topic"), "table")

    with pytest.raises(RegistryUrlError, match="CDFBRIDGE_SCHEMA_REGISTRY__URL"):
        schemas.use(KEY, KEY, version=1)


def test_a_subject_not_registered_yet_is_still_waited_for(endpoints: Endpoints) -> None:
    schemas = Schemas(SchemaRegistrySettings(url=endpoints.registry).client_config())

    with pytest.raises(NotPublishedYetError, match="has not published"):
        schemas.latest_value(unique("topic"))


class Asked:
    """A registry client, its look-ups by version counted (each passed on)."""

    def __init__(self, client: Any) -> None:
        self.client, self.subjects = client, list[str]()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.client, name)
        if name != "get_version":
            return found

        def counted(subject: str, *args: Any, **kwargs: Any) -> Any:
            self.subjects.append(subject)
            return found(subject, *args, **kwargs)

        return counted


def test_a_tables_set_up_asks_for_its_key_once(
    endpoints: Endpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = unique("keyed")
    client = SchemaRegistryClient(SchemaRegistrySettings(url=endpoints.registry).client_config())
    client.register_schema(key_subject(topic), Schema(json.dumps(KEY), "AVRO"))
    schemas = Schemas(SchemaRegistrySettings(url=endpoints.registry).client_config())
    asked = Asked(schemas._client)
    monkeypatch.setattr(schemas, "_client", asked)

    # The ORDER BY, then the sharding key, as a table's set-up asks for them.
    assert schemas.order_by(topic, []) == ["id"]
    assert schemas.shard_by(topic, []) == ["id"]

    assert asked.subjects == [key_subject(topic)]
