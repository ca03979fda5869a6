"""The version rule is written three times, and all three agree row for row.

`schemas.changes` has it in Python (`version`, `is_deleted`) and as ClickHouse SQL
(`version_sql`, `IS_DELETED_SQL`: the MATERIALIZED columns of the tables the consumer and the
Kafka engine write); the producer has it as a Spark expression (the `_order` it sorts a
chunk of one generation by, so without the generation term, and the delete flag its
tombstones follow). Each is run on the same changes, in the real ClickHouse and
the shared SparkSession, and compared with one expected table, so a failure names the copy
that drifted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from schemas import changes
from schemas.avro import key_schema, value_schema
from schemas.clickhouse import columns, literal

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def producer_rule(frame: Any, key: Any, value: Any) -> Any:
    """The producer's Spark columns for the rule, as (_version, _is_deleted) per change."""
    from producer.encode.encode import (  # follows the producer
        IS_DELETE,
        ORDER,
        Encoding,
        WireSchema,
    )

    encoding = Encoding(WireSchema(key, 0), WireSchema(value, 0), ["id"], include_preimage=True)
    return encoding.encode(frame).select(ORDER, IS_DELETE)


# (_commit_version, _change_type, _generation) → (_version, _is_deleted). Within a commit a
# delete (and the preimage of an update, which deletes the key it leaves) sorts before the
# row that survives it; a later commit beats both, and a later generation beats any commit.
G = changes.GENERATION_SHIFT
RULE = [
    (1, changes.INSERT, 0, 3, 0),
    (1, changes.UPDATE_PREIMAGE, 0, 2, 1),
    (1, changes.UPDATE_POSTIMAGE, 0, 3, 0),
    (1, changes.DELETE, 0, 2, 1),
    (1, changes.SNAPSHOT, 0, 3, 0),
    (0, changes.INSERT, 0, 1, 0),
    (0, changes.DELETE, 0, 0, 1),
    (0, changes.SNAPSHOT, 0, 1, 0),
    (2**40, changes.UPDATE_PREIMAGE, 0, 2**41, 1),
    (2**40, changes.UPDATE_POSTIMAGE, 0, 2**41 + 1, 0),
    (2**40, changes.DELETE, 0, 2**41, 1),
    (0, changes.SNAPSHOT, 1, G + 1, 0),
    (0, changes.DELETE, 1, G, 1),
    (2**40, changes.INSERT, 3, 3 * G + 2**41 + 1, 0),
]
TABLE = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False}]}
KEY, VALUE = key_schema(TABLE, ["id"], "rule"), value_schema(TABLE, "rule", ["id"])

Row = tuple[int, str, int, int, int]


def by_python() -> list[Row]:
    return [
        (v, t, g, changes.version(v, t, g), int(changes.is_deleted(t))) for v, t, g, _, _ in RULE
    ]


def by_clickhouse(clickhouse: Any, generation: bool = True) -> list[Row]:
    """The SQL on the contract's ClickHouse types for the two columns, in the real server;
    without the generation term as tables of an older generation's shape have it."""
    types = dict(columns(VALUE))
    names = ("id", changes.COMMIT_VERSION, changes.CHANGE_TYPE, changes.GENERATION)
    structure = ", ".join(f"{name} {types[name]}" for name in names)
    rows = ", ".join(f"({n}, {v}, {literal(t)}, {g})" for n, (v, t, g, _, _) in enumerate(RULE))
    result = clickhouse.query(
        f"SELECT {changes.COMMIT_VERSION}, {changes.CHANGE_TYPE}, {changes.GENERATION}, "
        f"{changes.version_sql(generation)}, {changes.IS_DELETED_SQL} "
        f"FROM values({literal(structure)}, {rows}) ORDER BY id"
    ).result_rows
    return [
        (v, t, g, version + (g * G if not generation else 0), d) for v, t, g, version, d in result
    ]


def by_spark(spark: Any) -> list[Row]:
    committed_at = datetime(2024, 1, 1)
    frame = spark.createDataFrame(
        [(n, t, v, committed_at) for n, (v, t, _, _, _) in enumerate(RULE)],
        f"id BIGINT, {changes.CHANGE_TYPE} STRING, {changes.COMMIT_VERSION} BIGINT, "
        f"{changes.COMMIT_TIMESTAMP} TIMESTAMP",
    )
    ordered = producer_rule(frame.orderBy("id"), KEY, VALUE).collect()
    # The encoded frame keeps the order but not the input columns; a row it dropped shows as
    # a short result in differences().
    return [
        (v, t, g, g * G + rule[0], int(rule[1]))
        for (v, t, g, _, _), rule in zip(RULE, ordered, strict=False)
    ]


def differences(got: list[Row]) -> list[str]:
    if len(got) != len(RULE):
        return [f"{len(got)} rows back for the table's {len(RULE)}"]
    return [
        f"({v}, {t!r}, generation {g}) gave ({version}, {deleted}), expected ({want}, {want_d})"
        for (v, t, g, version, deleted), (*_, want, want_d) in zip(got, RULE, strict=True)
        if (version, deleted) != (want, want_d)
    ]


def test_python_clickhouse_and_spark_give_every_change_the_same_version_and_delete_flag(
    clickhouse: Any, spark: Any
) -> None:
    results = {
        "Python (schemas.changes.version, is_deleted)": by_python(),
        "ClickHouse (schemas.changes.version_sql, IS_DELETED_SQL)": by_clickhouse(clickhouse),
        "ClickHouse without the generation term, plus it": by_clickhouse(clickhouse, False),
        "Spark (producer.encode.encode.Encoding: _order plus the generation, _is_delete)": by_spark(
            spark
        ),
    }

    broken = {name: wrong for name, got in results.items() if (wrong := differences(got))}
    assert not broken, "\n".join(
        f"{name} breaks the version rule: {'; '.join(wrong)}" for name, wrong in broken.items()
    )
