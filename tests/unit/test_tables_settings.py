"""One config file lists the lake's tables for the producer, the consumer and verify."""

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from producer.cli import main as producer_main
from producer.cli import parser, settings_from
from producer.settings import ProducerSettings
from services.tables import TableEntry, own_sections
from verify.settings import VerifySettings

LAKE = """
[source]
poll_interval_s = 0.5
max_rows_per_chunk = 1000

[consumer]
batch_seconds = 0.5

[[tables]]
table = "s3a://lake/orders"
primary_key = "order_id"
hash_columns = ["email"]
exclude_columns = "notes, internal"
target = "orders"
order_by = ["order_id", "day"]
partition_by = "toYYYYMM(day)"

[[tables]]
table = "s3a://lake/customers"
primary_key = ["id"]
topic = "cdfbridge.crm.customers"
snapshot = true
max_rows_per_chunk = 50
"""


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    path = tmp_path / "lake.toml"
    path.write_text(LAKE)
    return path


def test_each_table_lays_its_own_keys_over_the_source_defaults(lake: Path) -> None:
    orders, customers = settings_from(parser().parse_args(["--config", str(lake)])).sources()

    assert (orders.table, orders.topic_name, orders.primary_key) == (
        "s3a://lake/orders",
        "cdfbridge.orders",
        ["order_id"],
    )
    assert (orders.exclude_columns, orders.hash_columns) == (["notes", "internal"], ["email"])
    assert (orders.max_rows_per_chunk, orders.snapshot, orders.poll_interval_s) == (
        1000,
        False,
        0.5,
    )
    assert (customers.topic_name, customers.snapshot, customers.max_rows_per_chunk) == (
        "cdfbridge.crm.customers",
        True,
        50,
    )


def test_the_consumer_keys_of_an_entry_are_the_consumers_alone(lake: Path) -> None:
    entry = TableEntry(**tomllib.loads(LAKE)["tables"][0])

    assert (entry.target_table, entry.order_by, entry.partition_by) == (
        "orders",
        ["order_id", "day"],
        "toYYYYMM(day)",
    )
    assert not {"target", "order_by", "partition_by"} & entry.producer_overrides().keys()


def test_a_single_table_without_a_list_is_followed_as_before() -> None:
    settings = ProducerSettings(source={"table": "/data/t", "primary_key": "a,b"})

    assert [(s.table, s.primary_key) for s in settings.sources()] == [("/data/t", ["a", "b"])]


@pytest.mark.parametrize(
    ("entries", "named"),
    [
        (
            [{"table": "/a", "primary_key": "id"}, {"table": "/x/a", "primary_key": "id"}],
            "cdfbridge.a",
        ),
        ([{"table": "/a", "primary_key": "id", "hash_columns": "id"}], "primary-key columns"),
        (
            [{"table": "/a", "primary_key": "id", "hash_columns": "e", "exclude_columns": "e"}],
            "both",
        ),
        ([{"table": "/a", "primary_key": "id", "order_by": "day"}], "order_by must hold"),
        ([{"table": "/a"}], "primary_key"),
        ([{"table": "/a", "primary_key": "id", "snapshoot": True}], "snapshoot"),
    ],
)
def test_a_table_list_that_cannot_work_is_refused_naming_the_problem(
    entries: list[dict[str, object]], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        ProducerSettings(tables=entries)


def test_a_table_by_flags_and_a_table_list_together_exit_2(
    lake: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = producer_main(["--config", str(lake), "--table", "/t", "--primary-key", "id"])

    assert code == 2
    assert "not both" in capsys.readouterr().err


def test_one_file_serves_every_stage_but_an_unknown_section_is_still_refused() -> None:
    values = {**tomllib.loads(LAKE), "verfy": {}}

    kept = own_sections(values, ProducerSettings)

    assert "consumer" not in kept and "source" in kept
    with pytest.raises(ValidationError, match="verfy"):
        ProducerSettings(**kept)


def test_verify_compares_every_listed_table_or_the_one_picked_with_its_entry() -> None:
    values = own_sections(tomllib.loads(LAKE), VerifySettings)

    every = VerifySettings(**values).each()
    picked = VerifySettings(**values, verify={"table": "s3a://lake/orders", "wait_seconds": 5})

    assert [s.verify.topic_name for s in every] == ["cdfbridge.orders", "cdfbridge.crm.customers"]
    (orders,) = picked.each()
    assert (orders.verify.target_table, orders.verify.hash_columns) == ("orders", ["email"])
    assert (orders.verify.exclude_columns, orders.verify.wait_seconds) == (["notes", "internal"], 5)


def test_latest_reaches_every_listed_table_and_excludes_a_version() -> None:
    values = own_sections(tomllib.loads(LAKE), VerifySettings)

    every = VerifySettings(**values, verify={"latest": True}).each()

    assert [s.verify.latest for s in every] == [True, True]
    with pytest.raises(ValidationError, match="--version or --latest"):
        VerifySettings(verify={"table": "/t", "latest": True, "version": 3})


def test_resync_and_rebuild_settings_default_to_an_operator_and_a_replayable_topic() -> None:
    lake = ProducerSettings(
        tables=[
            {"table": "/data/a", "primary_key": "id", "on_incompatible_change": "resync"},
            {"table": "/data/b", "primary_key": "id"},
        ],
    )
    a, b = lake.sources()

    assert (a.on_incompatible_change, b.on_incompatible_change) == ("resync", "stop")
    assert b.topic_config == {"cleanup.policy": "compact"}
    with pytest.raises(ValidationError, match="on_incompatible_change"):
        TableEntry(table="/data/c", primary_key=["id"], on_incompatible_change="skip")


def test_a_topic_created_for_tombstones_keeps_records_a_day_unless_its_config_says() -> None:
    lake = ProducerSettings(
        tables=[
            {"table": "/data/a", "primary_key": "id", "tombstones": True},
            {"table": "/data/b", "primary_key": "id"},
        ],
    )
    a, b = lake.sources()
    [c] = ProducerSettings(
        source={
            "table": "/data/c",
            "primary_key": "id",
            "tombstones": True,
            "topic_config": {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"},
        }
    ).sources()

    assert a.created_topic_config == {
        "min.compaction.lag.ms": "86400000",
        "cleanup.policy": "compact",
    }
    assert b.created_topic_config == {"cleanup.policy": "compact"}
    assert c.created_topic_config["min.compaction.lag.ms"] == "0"


def test_the_consumer_rebuilds_by_hand_unless_told_and_reads_the_storage_section() -> None:
    from consumer.settings import load
    from schemas.errors import ConfigError

    settings = load(topic_flags=["cdfbridge.orders"])
    assert (settings.consumer.rebuild, settings.consumer.lake_location) == ("manual", "")
    assert load(topic_flags=["t"], rebuild="auto").consumer.rebuild == "auto"
    with pytest.raises(ConfigError, match="consumer.rebuild"):
        load(topic_flags=["t"], rebuild="sometimes")
