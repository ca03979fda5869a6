"""Column names Avro cannot hold: hyphens, non-ASCII letters, leading digits, SQL keywords,
mixed case, and with column mapping spaces and punctuation, replicated under their own names
by the Python consumer and by ClickHouse's Kafka engine, and checked by cdfbridge-verify."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest

from consumer.cli import main as consumer_main
from schemas.clickhouse import quote
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.test_verify import consume
from tests.producer_helpers import publish
from verify.check import verify

pytestmark = [pytest.mark.integration, pytest.mark.spark]

STREET = pa.struct([("zip-code", pa.string()), ("city", pa.string())])
AWKWARD = ["order-id", "größe", "2nd_value", "select", "from", "MixedCase", "Straße"]


def awkward_table(path: str) -> int:
    """A table delta-rs writes, its names kept by Delta as they are; returns its last version."""
    from deltalake import DeltaTable, write_deltalake

    rows = {
        "order-id": pa.array([1, 2, 3], pa.int64()),
        "größe": [1.5, 2.5, None],
        "2nd_value": ["a", "b", "c"],
        "select": ["s1", "s2", "s3"],
        "from": pa.array([10, 20, 30], pa.int64()),
        "MixedCase": ["M", "N", "O"],
        "Straße": pa.array([{"zip-code": "0150", "city": "Oslo"}, None, None], STREET),
    }
    write_deltalake(path, pa.table(rows), configuration={"delta.enableChangeDataFeed": "true"})
    table = DeltaTable(path)
    table.delete('"order-id" = 2')
    table.update(
        updates={
            '"2nd_value"': "'changed'",
            '"Straße"': "named_struct('zip-code', '9', 'city', 'X')",
        },
        predicate='"order-id" = 3',
    )
    return table.version()


def test_awkward_names_reach_clickhouse_unchanged_by_either_consumer_and_verify_equal(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Any,
    clickhouse: Any,
    ch_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = str(tmp_path / "awkward")
    topic = publish(spark, endpoints, path, "order-id", until_version=awkward_table(path))

    checked = consume(endpoints, path, topic, ch_database)

    by_python = f"`{ch_database}`.`{topic}_current`"
    names = clickhouse.query(f"SELECT * FROM {by_python} LIMIT 0").column_names
    assert list(names[: len(AWKWARD)]) == AWKWARD
    rows = clickhouse.query(
        f"SELECT `order-id`, `größe`, `2nd_value`, `select`, `from`, `MixedCase`, "
        f"`Straße`.`zip-code` FROM {by_python} ORDER BY `order-id`"
    ).result_rows
    assert rows == [(1, 1.5, "a", "s1", 10, "M", "0150"), (3, None, "changed", "s3", 30, "O", "9")]
    report = verify(checked)
    assert report.equal, report.render()

    consumer_env(monkeypatch, endpoints, ch_database)
    ddl = ["--topic", topic, "--group", f"{topic}-group", "--table", "by_kafka"]
    assert consumer_main([*ddl, "kafka-engine-ddl", "--apply"]) == 0
    everything = "SELECT * FROM `{}`.`{}` ORDER BY `order-id`"
    wanted = clickhouse.query(everything.format(ch_database, f"{topic}_current")).result_rows
    deadline = time.monotonic() + 90
    while (
        clickhouse.query(everything.format(ch_database, "by_kafka_current")).result_rows != wanted
    ):
        assert time.monotonic() < deadline, "the Kafka engine's table differs after 90 s"
        time.sleep(0.5)
    unparsed = f"SELECT count() FROM `{ch_database}`.`by_kafka_kafka_errors`"
    assert clickhouse.command(unparsed) == 0


def test_spaces_and_punctuation_under_column_mapping_replicate_and_verify_equal(
    spark: Any, endpoints: Endpoints, tmp_path: Any, clickhouse: Any, ch_database: str
) -> None:
    path = str(tmp_path / "mapped")
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} (`the.id` BIGINT, `first name` STRING, `amount (eur)` DECIMAL(10, 2), "
        "`a,b;c{d}=e` INT) USING delta TBLPROPERTIES (delta.columnMapping.mode = 'name', "
        "delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'Ada', 1.50, 7), (2, 'Bo', 2.25, 8)")
    spark.sql(f"UPDATE {table} SET `amount (eur)` = 9.99 WHERE `first name` = 'Bo'")
    # One change per chunk: each commit is read in key-hash slices over `the.id`.
    topic = publish(spark, endpoints, path, "the.id", until_version=2, max_rows_per_chunk=1)

    checked = consume(endpoints, path, topic, ch_database)

    rows = clickhouse.query(
        f"SELECT `the.id`, `first name`, toString(`amount (eur)`), `a,b;c{{d}}=e` "
        f"FROM `{ch_database}`.`{topic}_current` ORDER BY `the.id`"
    ).result_rows
    assert rows == [(1, "Ada", "1.5", 7), (2, "Bo", "9.99", 8)]
    report = verify(checked)
    assert report.equal, report.render()


# Names that would end a quoted identifier or string, end a statement, start a comment, or
# that only unicode can spell: each must come through every DDL and query as a name.
HOSTILE_COLUMNS = ["x`; DROP TABLE victim; --", 'it\'s "quoted"', "a--b /* c */", "naïve ☃ 名前"]
HOSTILE_TABLE = "t`; DROP TABLE victim; --'\"ü"


def spark_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def test_hostile_column_and_table_names_are_names_in_every_statement(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Any,
    clickhouse: Any,
    ch_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An injection through a column name and a table name: the consumer's DDL and inserts,
    the Kafka engine's DDL and cdfbridge-verify's staging table leave `victim` alone."""
    clickhouse.command(f"CREATE TABLE `{ch_database}`.victim (a Int8) ENGINE = Memory")
    clickhouse.command(f"INSERT INTO `{ch_database}`.victim VALUES (1)")
    path = str(tmp_path / "hostile")
    key, first, second, third = (spark_name(n) for n in HOSTILE_COLUMNS)
    table = f"delta.`{path}`"
    spark.sql(
        f"CREATE TABLE {table} ({key} BIGINT, {first} STRING, {second} INT, {third} STRING) "
        "USING delta TBLPROPERTIES (delta.columnMapping.mode = 'name', "
        "delta.enableChangeDataFeed = true)"
    )
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a''; --', 1, 'x`y'), (2, 'b', 2, '☃')")
    # Delta's UPDATE cannot name a column with a backtick in it; its DELETE can.
    spark.sql(f"INSERT INTO {table} VALUES (3, 'c', 3, 'z')")
    spark.sql(f"DELETE FROM {table} WHERE {third} = '☃'")
    topic = publish(spark, endpoints, path, HOSTILE_COLUMNS[0], until_version=3)

    report = verify(consume(endpoints, path, topic, ch_database, table=HOSTILE_TABLE))
    assert report.equal, report.render()

    consumer_env(monkeypatch, endpoints, ch_database)
    engine_table = HOSTILE_TABLE + "_ke"
    ddl = ["--topic", topic, "--group", f"{topic}-ke", "--table", engine_table]
    assert consumer_main([*ddl, "kafka-engine-ddl", "--apply"]) == 0

    current = f"`{ch_database}`.{quote(HOSTILE_TABLE + '_current')}"
    names = [row[0] for row in clickhouse.query(f"DESCRIBE TABLE {current}").result_rows]
    assert names[: len(HOSTILE_COLUMNS)] == HOSTILE_COLUMNS
    everything = f"SELECT {', '.join(quote(n) for n in HOSTILE_COLUMNS)} FROM {{}} ORDER BY 1"
    wanted = [(1, "a'; --", 1, "x`y"), (3, "c", 3, "z")]
    assert clickhouse.query(everything.format(current)).result_rows == wanted
    by_engine = f"`{ch_database}`.{quote(engine_table + '_current')}"
    deadline = time.monotonic() + 90
    while clickhouse.query(everything.format(by_engine)).result_rows != wanted:
        assert time.monotonic() < deadline, "the Kafka engine's table differs after 90 s"
        time.sleep(0.5)
    for command in ("status", "rebuild"):
        assert consumer_main(["--topic", topic, "--table", HOSTILE_TABLE, command]) == 0
    assert clickhouse.query(everything.format(current)).result_rows == wanted
    assert clickhouse.command(f"SELECT count() FROM `{ch_database}`.victim") == 1
