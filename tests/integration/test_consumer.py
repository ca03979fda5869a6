"""The Python consumer keeps a ClickHouse ReplacingMergeTree equal to the Delta table."""

from decimal import Decimal
from typing import Any

import pytest

from consumer.group.loop import Pipeline
from tests.endpoints import Endpoints
from tests.integration.consumer_support import (
    Changes,
    order,
    orphan_dead_letter_topics_removed,  # noqa: F401 - autouse
    settings,
)

pytestmark = pytest.mark.integration


def consume(endpoints: Endpoints, topic: str, database: str, **consumer: Any) -> Pipeline:
    pipeline = Pipeline(settings(endpoints, topic, database, **consumer), until_caught_up=True)
    pipeline.run()
    return pipeline


def test_all_change_types_leave_the_delta_result(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=3)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(1, 6)], "snapshot", 0)
    changes.send([order(6)], "insert", 1)
    changes.send([order(2)], "update_preimage", 2)
    changes.send([order(2, "renamed")], "update_postimage", 2)
    changes.send([order(3)], "delete", 3)

    consume(endpoints, topic, ch_database)

    current = clickhouse.query(
        f"SELECT id, name, amount FROM `{ch_database}`.`{topic}_current` ORDER BY id"
    ).result_rows
    assert current == [
        (1, "o1", Decimal("0.25")),
        (2, "renamed", Decimal("0.5")),
        (4, "o4", Decimal("1")),
        (5, "o5", Decimal("1.25")),
        (6, "o6", Decimal("1.5")),
    ]


def test_delete_then_reinsert_same_key_keeps_reinsert(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.send([order(1), order(2)], "insert", 1)
    changes.send([order(1)], "delete", 2)  # an overwrite: delete and insert in one commit
    changes.send([order(1, "again")], "insert", 2)
    changes.send([order(2)], "delete", 3)
    changes.send([order(2, "back")], "insert", 4)  # re-inserted in a later commit

    consume(endpoints, topic, ch_database)

    current = clickhouse.query(
        f"SELECT id, name FROM `{ch_database}`.`{topic}_current` ORDER BY id"
    ).result_rows
    assert current == [(1, "again"), (2, "back")]


def test_table_is_created_with_faithful_types_and_key_from_the_key_schema(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=1)
    rich = {
        "type": "struct",
        "fields": [
            {"name": "region", "type": "string", "nullable": False, "metadata": {}},
            {"name": "id", "type": "long", "nullable": False, "metadata": {}},
            {"name": "price", "type": "decimal(18,4)", "nullable": True, "metadata": {}},
            {"name": "at", "type": "timestamp", "nullable": True, "metadata": {}},
            {"name": "local", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
            {"name": "day", "type": "date", "nullable": True, "metadata": {}},
            {
                "name": "tags",
                "type": {"type": "array", "elementType": "string", "containsNull": True},
                "nullable": True,
                "metadata": {},
            },
            {
                "name": "attrs",
                "type": {
                    "type": "map",
                    "keyType": "string",
                    "valueType": "long",
                    "valueContainsNull": False,
                },
                "nullable": True,
                "metadata": {},
            },
            {
                "name": "address",
                "type": {
                    "type": "struct",
                    "fields": [{"name": "city", "type": "string", "nullable": True}],
                },
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    changes = Changes(endpoints, topic, rich, primary_key=("region", "id"))
    row = {
        "region": "eu",
        "id": 1,
        "price": Decimal("1.2345"),
        "at": None,
        "local": None,
        "day": None,
        "tags": ["a", None],
        "attrs": {"k": 1},
        "address": {"city": "Oslo"},
    }
    changes.send([row], "insert", 1)

    consume(endpoints, topic, ch_database)

    types = dict(
        clickhouse.query(
            "SELECT name, type FROM system.columns WHERE database = {d:String} "
            "AND table = {t:String}",
            parameters={"d": ch_database, "t": topic},
        ).result_rows
    )
    assert types == {
        "region": "String",
        "id": "Int64",
        "price": "Nullable(Decimal(18, 4))",
        "at": "Nullable(DateTime64(6, 'UTC'))",
        "local": "Nullable(DateTime64(6))",
        "day": "Nullable(Date32)",
        "tags": "Array(Nullable(String))",
        "attrs": "Map(String, Int64)",
        "address": "Nullable(Tuple(city Nullable(String)))",
        "_change_type": "String",
        "_commit_version": "Int64",
        "_commit_timestamp": "DateTime64(6, 'UTC')",
        "_generation": "Int64",
        "_version": "UInt64",
        "_is_deleted": "UInt8",
    }
    sorting_key = clickhouse.command(
        f"SELECT sorting_key FROM system.tables WHERE database = '{ch_database}' "
        f"AND name = '{topic}'"
    )
    assert sorting_key == "region, id"
    rows = clickhouse.query(
        f"SELECT region, price, tags, attrs, address.city FROM `{ch_database}`.`{topic}`"
    ).result_rows
    assert rows == [("eu", Decimal("1.2345"), ["a", None], {"k": 1}, "Oslo")]


def test_existing_table_that_differs_is_refused_naming_the_columns(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    from schemas.target import SchemaMismatchError

    topic = topic_factory(partitions=1)
    Changes(endpoints, topic).send([order(1)], "insert", 1)
    consume(endpoints, topic, ch_database)
    # Not a type the schema's could widen into, nor a wider one it could be read into.
    clickhouse.command(
        f"ALTER TABLE `{ch_database}`.`{topic}` MODIFY COLUMN `amount` Nullable(String)"
    )

    with pytest.raises(SchemaMismatchError, match=r"amount is Nullable\(String\) in the"):
        consume(endpoints, topic, ch_database)


def test_existing_table_without_a_deduplication_window_gets_one(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=1)
    Changes(endpoints, topic).send([order(1)], "insert", 1)
    consume(endpoints, topic, ch_database)
    table = f"`{ch_database}`.`{topic}`"
    clickhouse.command(
        f"ALTER TABLE {table} MODIFY SETTING non_replicated_deduplication_window = 0"
    )

    consume(endpoints, topic, ch_database, deduplication_window=77)

    engine = clickhouse.command(
        f"SELECT engine_full FROM system.tables WHERE database = '{ch_database}' "
        f"AND name = '{topic}'"
    )
    assert "non_replicated_deduplication_window = 77" in engine


def test_table_is_created_partitioned_and_a_different_partition_key_is_refused(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    from schemas.target import SchemaMismatchError

    topic = topic_factory(partitions=1)
    Changes(endpoints, topic).send([order(1), order(2)], "insert", 1)
    consume(endpoints, topic, ch_database, partition_by="id % 2")
    partitions = clickhouse.command(
        f"SELECT uniqExact(partition) FROM system.parts WHERE database = '{ch_database}' "
        f"AND table = '{topic}' AND active"
    )

    with pytest.raises(SchemaMismatchError, match="partitioned by id % 2, but partition_by is"):
        consume(endpoints, topic, ch_database, partition_by="toYYYYMM(_commit_timestamp)")
    assert partitions == 2
