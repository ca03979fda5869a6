"""--exclude-columns and --hash-columns end to end: a left-out column reaches neither Kafka,
the registry nor ClickHouse; a hashed one arrives as the SHA-256 hex of its value, NULL
staying NULL; cdfbridge-verify given the same policy finds ClickHouse equal to the table."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

from consumer.group.loop import Pipeline
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.producer_helpers import Record, append, create_table, publish, read_topic
from verify.cli import main as verify_main

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CUSTOMERS = "id STRING, name STRING, email STRING, ssn STRING, phone BIGINT, photo BINARY"
HASHED = ("email", "phone", "photo")
POLICY = {"exclude_columns": ["ssn"], "hash_columns": list(HASHED)}
POLICY_EVOLVING = {"exclude_columns": ["ssn"], "hash_columns": ["email"]}
SECRETS = (b"111-22-3333", b"ann@example.com", b"49151123")


def sha(value: Any) -> str | None:
    """What the producer publishes for a hashed value: bytes as they are, others as text."""
    if value is None:
        return None
    raw = bytes(value) if isinstance(value, bytes | bytearray) else str(value).encode()
    return hashlib.sha256(raw).hexdigest()


def customers(spark: Any, path: str) -> int:
    """Versions 0-4: inserts with NULLs, an update of a hashed and a left-out column, a
    delete and a negative number. Returns the last version."""
    create_table(spark, path, CUSTOMERS)
    spark.sql(
        f"INSERT INTO delta.`{path}` VALUES "
        "('1', 'ann', 'ann@example.com', '111-22-3333', 4915112345678, X'00FF'), "
        "('2', 'bob', NULL, '222-33-4444', NULL, NULL), "
        "('3', 'cy', 'cy@example.com', NULL, 0, X'')"
    )
    spark.sql(f"UPDATE delta.`{path}` SET email = 'ann@new.example', ssn = '9' WHERE id = '1'")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = '3'")
    append(spark, path, [("4", "dee", "Dée@Example.com", "5", -42, b"\x01")], CUSTOMERS)
    return 4


def expected(spark: Any, path: str) -> list[tuple[Any, ...]]:
    """(id, name, hashed email, phone, photo, _change_type, _commit_version) of every change
    the producer publishes, from the table's own Change Data Feed."""
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
    rows = feed.load(path).where("_change_type != 'update_preimage'").collect()
    return sorted(
        (r.id, r.name, *(sha(r[c]) for c in HASHED), r._change_type, r._commit_version)
        for r in rows
    )


def published(records: list[Record]) -> list[tuple[Any, ...]]:
    return sorted(
        (v["id"], v["name"], *(v[c] for c in HASHED), v["_change_type"], v["_commit_version"])
        for v in (r.value for r in records)
        if v is not None
    )


@pytest.fixture(scope="module")
def replicated(spark: Any, endpoints: Endpoints, tmp_path_factory: Any) -> tuple[str, str]:
    """The customers table published with the policy: (path, topic)."""
    path = str(tmp_path_factory.mktemp("policy") / "customers")
    last = customers(spark, path)
    return path, publish(spark, endpoints, path, "id", until_version=last, **POLICY)


def test_a_left_out_column_is_in_no_message_and_hashed_ones_are_their_sha256(
    spark: Any, endpoints: Endpoints, registry: Any, replicated: tuple[str, str]
) -> None:
    path, topic = replicated

    records = read_topic(endpoints, topic)

    assert published(records) == expected(spark, path)
    assert all("ssn" not in r.value for r in records if r.value is not None)
    assert not [s for s in SECRETS for r in records if s in (r.raw_value or b"")]
    by_id = {r.value["id"]: r.value for r in records if r.value is not None}
    assert by_id["2"]["email"] is None and by_id["2"]["phone"] is None  # NULL stays NULL
    assert by_id["4"]["email"] == hashlib.sha256("Dée@Example.com".encode()).hexdigest()
    assert by_id["4"]["phone"] == hashlib.sha256(b"-42").hexdigest()
    value = json.loads(registry.get_latest_version(f"{topic}-value").schema.schema_str)
    fields = {f["name"]: f["type"] for f in value["fields"]}
    assert "ssn" not in fields
    assert [fields[c] for c in HASHED] == [["null", "string"]] * 3


def test_clickhouse_gets_the_hashes_without_the_left_out_column_and_verify_finds_it_equal(
    endpoints: Endpoints,
    clickhouse: Any,
    ch_database: str,
    replicated: tuple[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, topic = replicated
    table = unique("customers")
    into = consumer_settings(endpoints, topic, ch_database, table=table, group=unique("group"))
    Pipeline(into, until_caught_up=True).run()

    kinds = dict(
        clickhouse.query(
            "SELECT name, type FROM system.columns WHERE database = {d:String} AND table = {t:String}",
            parameters={"d": ch_database, "t": table},
        ).result_rows
    )
    assert "ssn" not in kinds
    assert [kinds[c] for c in HASHED] == ["Nullable(String)"] * 3
    rows = clickhouse.query(
        f"SELECT id, email, phone, photo FROM `{ch_database}`.`{table}_current` ORDER BY id"
    ).result_rows
    assert rows == [
        ("1", sha("ann@new.example"), sha(4915112345678), sha(b"\x00\xff")),
        ("2", None, None, None),
        ("4", sha("Dée@Example.com"), sha(-42), sha(b"\x01")),
    ]

    monkeypatch.setenv("CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS", endpoints.kafka)
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__URL", endpoints.clickhouse)
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__DATABASE", ch_database)
    args = ["--table", path, "--topic", topic, "--clickhouse-table", table]
    flags = ["--exclude-columns", "ssn", "--hash-columns", ",".join(HASHED)]

    assert verify_main([*args, *flags]) == 0, capsys.readouterr()
    assert capsys.readouterr().out.rstrip().endswith("equal")
    assert verify_main(args) == 1  # without the policy, the raw table is not what was sent
    assert "column `ssn` is in the Delta table, not in ClickHouse" in capsys.readouterr().out

    monkeypatch.setenv("CDFBRIDGE_VERIFY__EXCLUDE_COLUMNS", "ssn")
    monkeypatch.setenv("CDFBRIDGE_VERIFY__HASH_COLUMNS", ",".join(HASHED))
    assert verify_main([*args, "--reader", "spark"]) == 0, capsys.readouterr()
    assert capsys.readouterr().out.rstrip().endswith("equal")


def test_a_snapshot_leaves_out_and_hashes_the_same_columns(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    customers(spark, delta_path)

    topic = publish(spark, endpoints, delta_path, "id", snapshot=True, until_version=4, **POLICY)

    values = sorted((r.value for r in read_topic(endpoints, topic) if r.value), key=str)
    assert [(v["id"], v["_change_type"], v["email"]) for v in values] == [
        ("1", "snapshot", sha("ann@new.example")),
        ("2", "snapshot", None),
        ("4", "snapshot", sha("Dée@Example.com")),
    ]
    assert all("ssn" not in v for v in values)


def test_a_new_left_out_column_changes_nothing_published_and_a_new_column_still_evolves(
    spark: Any, endpoints: Endpoints, delta_path: str, registry: Any
) -> None:
    create_table(spark, delta_path, "id STRING, email STRING")
    append(spark, delta_path, [("1", "a@x")], "id STRING, email STRING")
    spark.sql(f"ALTER TABLE delta.`{delta_path}` ADD COLUMNS (ssn STRING)")
    append(spark, delta_path, [("2", "b@x", "123")], "id STRING, email STRING, ssn STRING")
    topic = publish(spark, endpoints, delta_path, "id", until_version=3, **POLICY_EVOLVING)
    assert len(registry.get_versions(f"{topic}-value")) == 1  # the new ssn changed nothing

    spark.sql(f"ALTER TABLE delta.`{delta_path}` ADD COLUMNS (age BIGINT)")
    append(
        spark, delta_path, [("3", "c@x", "4", 7)], "id STRING, email STRING, ssn STRING, age BIGINT"
    )
    publish(spark, endpoints, delta_path, "id", topic=topic, until_version=5, **POLICY_EVOLVING)

    values = sorted((r.value for r in read_topic(endpoints, topic) if r.value), key=str)
    assert [(v["id"], v["email"], v.get("age")) for v in values] == [
        ("1", sha("a@x"), None),
        ("2", sha("b@x"), None),
        ("3", sha("c@x"), 7),
    ]
    assert all("ssn" not in v for v in values)
    assert len(registry.get_versions(f"{topic}-value")) == 2


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (
            ["--exclude-columns", "sn,ssn"],
            r"--exclude-columns names \['sn'\], which table .* does not have at version 1 "
            r"\(its columns: id, score, ssn\); fix --exclude-columns",
        ),
        (
            ["--hash-columns", "score"],
            r"column score has type double, which cannot be hashed: --hash-columns takes "
            r"binary, byte, integer, long, short, string columns",
        ),
    ],
    ids=["missing column", "unhashable type"],
)
def test_a_policy_the_table_cannot_take_stops_the_producer_with_exit_2_before_publishing(
    spark: Any,
    endpoints: Endpoints,
    delta_path: str,
    flags: list[str],
    named: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from producer.cli import main as producer_main

    columns = "id STRING, score DOUBLE, ssn STRING"
    create_table(spark, delta_path, columns)
    append(spark, delta_path, [("1", 0.5, "123")], columns)
    monkeypatch.setenv("CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS", endpoints.kafka)
    monkeypatch.setenv("CDFBRIDGE_SCHEMA_REGISTRY__URL", endpoints.registry)
    topic = unique("cdc")
    args = ["--table", delta_path, "--primary-key", "id", "--topic", topic]

    code = producer_main([*args, "--until-version", "1", "--metrics-port", "0", *flags])

    assert code == 2
    message = capsys.readouterr().err
    assert re.search(named, message), message
    assert "Traceback" not in message
    assert read_topic(endpoints, topic) == []
