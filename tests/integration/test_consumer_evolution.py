"""Poison messages go to the dead-letter topic; schemas evolve the table or stop it."""

import io
import json
from decimal import Decimal
from typing import Any

import fastavro
import pytest
from confluent_kafka import Consumer

from consumer.group.loop import Pipeline
from consumer.group.metrics import DEAD_LETTERS
from schemas.naming import dlq_topic
from schemas.target import SchemaMismatchError
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    COMMITTED_AT,
    ORDERS,
    Changes,
    order,
    orphan_dead_letter_topics_removed,  # noqa: F401 - autouse
    settings,
    with_column,
)

pytestmark = pytest.mark.integration


def consume(endpoints: Endpoints, topic: str, database: str) -> Pipeline:
    pipeline = Pipeline(settings(endpoints, topic, database), until_caught_up=True)
    pipeline.run()
    return pipeline


def dead_letters(endpoints: Endpoints, topic: str, expected: int) -> list[Any]:
    reader = Consumer(
        {
            "bootstrap.servers": endpoints.kafka,
            "group.id": f"{topic}-dlq-reader",
            "auto.offset.reset": "earliest",
        }
    )
    reader.subscribe([dlq_topic(topic)])
    found: list[Any] = []
    for _ in range(60):
        found += [m for m in reader.consume(10, timeout=0.5) if m.error() is None]
        if len(found) >= expected:
            break
    reader.close()
    return found


def too_wide_amount(changes: Changes, schema_id: int) -> bytes:
    """A value framed with the topic's schema whose decimal has more digits than its
    precision: Avro decodes it, ClickHouse's Decimal(10, 2) cannot hold it."""
    wide = json.loads(
        json.dumps(changes.value_schema).replace('"precision": 10', '"precision": 38')
    )
    body = io.BytesIO()
    row = {
        **order(99),
        "amount": Decimal("123456789012345678.00"),
        "_change_type": "insert",
        "_commit_version": 1,
        "_commit_timestamp": COMMITTED_AT,
        "_generation": 0,
    }
    fastavro.schemaless_writer(body, fastavro.parse_schema(wide), row)
    return b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()


def test_poison_messages_go_to_the_dlq_and_the_rest_is_inserted(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(5)], "insert", 1)
    schema_id = changes.registry.get_latest_version(f"{topic}-value").schema_id
    assert schema_id is not None
    changes.send_raw(b"k", b"not avro at all")  # offset 5
    changes.send_raw(b"k", b"\x00\x7f\xff\xff\xf0" + b"\x02")  # 6: unknown schema id
    changes.send_raw(b"k", too_wide_amount(changes, schema_id))  # 7
    changes.send_raw(b"k", None)  # 8: a tombstone, skipped
    changes.send([order(n) for n in range(5, 10)], "insert", 2)

    pipeline = consume(endpoints, topic, ch_database)

    ids = clickhouse.query(f"SELECT id FROM `{ch_database}`.`{topic}` ORDER BY id").result_rows
    assert ids == [(n,) for n in range(10)]
    letters = dead_letters(endpoints, topic, 3)
    headers = [dict(m.headers()) for m in letters]
    assert [h["cdfbridge.source.offset"] for h in headers] == [b"5", b"6", b"7"]
    assert {h["cdfbridge.source.partition"] for h in headers} == {b"0"}
    assert {h["cdfbridge.source.topic"] for h in headers} == {topic.encode()}
    assert b"Confluent wire format" in headers[0]["cdfbridge.error"]
    assert b"unknown schema id" in headers[1]["cdfbridge.error"]
    assert b"does not fit the table" in headers[2]["cdfbridge.error"]
    assert letters[0].value() == b"not avro at all"
    assert pipeline.metrics.total(DEAD_LETTERS) == 3


def test_new_nullable_field_adds_a_column_before_the_insert(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=2)
    changes = Changes(endpoints, topic)
    changes.send([order(1)], "insert", 1)
    consume(endpoints, topic, ch_database)
    changes.use_schema(with_column(ORDERS, "note", "string"))

    changes.send([{**order(2), "note": "new"}], "insert", 2)
    consume(endpoints, topic, ch_database)

    current = clickhouse.query(
        f"SELECT id, note FROM `{ch_database}`.`{topic}_current` ORDER BY id"
    ).result_rows
    assert current == [(1, None), (2, "new")]


def test_incompatible_schema_stops_the_consumer_and_points_at_rebuild(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.send([order(1)], "insert", 1)
    consume(endpoints, topic, ch_database)
    retyped = {
        **ORDERS,
        "fields": [*ORDERS["fields"][:2], {"name": "amount", "type": "double", "nullable": True}],
    }
    changes.use_schema(retyped)
    changes.send([{**order(2), "amount": 2.5}], "insert", 2)

    with pytest.raises(SchemaMismatchError, match="amount is .* cdfbridge-consumer rebuild"):
        consume(endpoints, topic, ch_database)

    assert clickhouse.command(f"SELECT count() FROM `{ch_database}`.`{topic}`") == 1


def test_a_table_whose_preimages_did_not_delete_is_given_the_contracts_rule(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    """A table made when `_is_deleted` was `_change_type = 'delete'` alone: the consumer
    brings it to the contract's rule, so an update_preimage of a key that moved deletes it."""
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.send([order(1)], "insert", 1)
    consume(endpoints, topic, ch_database)
    table = f"`{ch_database}`.`{topic}`"
    clickhouse.command(
        f"ALTER TABLE {table} MODIFY COLUMN _is_deleted UInt8 "
        "MATERIALIZED toUInt8(_change_type = 'delete')"
    )

    changes.send([order(1)], "update_preimage", 2)
    changes.send([order(2)], "update_postimage", 2)  # the row moved from key 1 to key 2
    consume(endpoints, topic, ch_database)

    ids = clickhouse.query(f"SELECT id FROM `{ch_database}`.`{topic}_current`").result_rows
    assert ids == [(2,)]
