"""Tables that change while a lake starts again: a column added, a protocol upgraded (deletion
vectors, which the file read leaves to Delta's reader), plain commits. Each first read after
the start crosses or follows those commits; every change is published once, none is
missing, and the rows after the new column carry it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from producer.run import run
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_many_tables import lake, producer_settings, published_once
from tests.producer_helpers import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _changes(spark: Any, path: str, last: int) -> int:
    """Changes a producer publishes for versions 0..last (no preimages), by Delta's reader."""
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 0)
        .option("endingVersion", last)
        .load(path)
    )
    return int(feed.where("_change_type <> 'update_preimage'").count())


def test_tables_that_change_schema_or_protocol_while_the_lake_starts_publish_every_change_once(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    tables = lake(tmp_path, "abcdef", rows=40)
    topics = {name: unique(f"starts_{name}") for name in tables}

    def entries(lasts: dict[str, int]) -> list[dict[str, Any]]:
        return [
            {"table": tables[name][0], "primary_key": "id", "topic": topics[name]}
            | {"until_version": lasts[name]}
            for name in tables
        ]

    run(producer_settings(endpoints, entries({n: v for n, (_, v) in tables.items()})), spark=spark)

    # Each table's next versions, known before they are written: the start waits for them.
    sql = {
        "a": [  # a column added, then a row that has it
            "ALTER TABLE {t} ADD COLUMNS (note STRING)",
            "INSERT INTO {t} (id, note) VALUES (100001, 'late')",
        ],
        "b": [  # the protocol upgraded, then a delete that writes a deletion vector
            "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
            "DELETE FROM {t} WHERE id % 3 = 0",
        ],
    }
    plain = ["INSERT INTO {t} (id) VALUES (100002)"]
    lasts = {name: last + len(sql.get(name, plain)) for name, (_, last) in tables.items()}
    settings = producer_settings(endpoints, entries(lasts))
    raised: list[BaseException] = []

    def again() -> None:
        try:
            run(settings, spark=spark)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            raised.append(exc)

    producer = threading.Thread(target=again, name="lake-again")
    before = _reads("delta")
    producer.start()
    for name, (path, _) in tables.items():  # while the tables start, one after another
        for statement in sql.get(name, plain):
            spark.sql(statement.format(t=f"delta.`{path}`"))
    producer.join(300)

    assert not producer.is_alive(), "the lake did not reach every table's until_version"
    assert not raised, raised
    for name, (path, _) in tables.items():
        seen = published_once(endpoints, topics[name])  # no (key, version) twice
        assert sum(seen.values()) == _changes(spark, path, lasts[name]), name  # none missing
    notes = {r.value.get("note") for r in read_topic(endpoints, topics["a"]) if r.value}
    assert "late" in notes
    assert _reads("delta") > before  # the deletion vector's commit, by Delta's reader


def _reads(reader: str) -> float:
    found = REGISTRY.get_sample_value("cdfbridge_producer_change_reads_total", {"reader": reader})
    return found or 0.0
