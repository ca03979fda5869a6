"""Several topics in one consumer: named, from [[tables]] or a pattern, each with its own
table settings, and every inconsistency refused at start-up naming the fix."""

from pathlib import Path

import pytest

from consumer import cli
from consumer.group.kafka import consumer_config, prefetch_kbytes
from consumer.settings import load
from consumer.topics import matching, resolve
from schemas.errors import ConfigError

LAKE = """
[source]                     # the producer's and verify's sections: left to them
poll_interval_s = 2.0

[verify]
wait_seconds = 5

[consumer]
group = "lake"
batch_rows = 500

[[tables]]
table = "s3a://lake/sales/orders"
primary_key = ["order_id"]
target = "orders_v2"
order_by = ["order_id", "day"]
partition_by = "toYYYYMM(day)"

[[tables]]
table = "s3a://lake/sales/customers"
primary_key = "customer_id"
topic = "crm.customers"
"""


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    config = tmp_path / "lake.toml"
    config.write_text(LAKE)
    return config


def test_each_tables_entry_is_a_topic_with_its_own_table_keys_over_the_consumer_section(
    lake: Path,
) -> None:
    settings = load(lake)

    assert settings.listed() == ["cdfbridge.orders", "crm.customers"]
    orders, customers = (settings.for_topic(t).consumer for t in settings.listed())
    assert (orders.topic, orders.target_table, orders.primary_key, orders.partition_by) == (
        "cdfbridge.orders",
        "orders_v2",
        ["order_id", "day"],
        "toYYYYMM(day)",
    )
    assert (customers.target_table, customers.primary_key, customers.partition_by) == (
        "crm_customers",
        [],  # the key schema's fields
        "",
    )
    assert (orders.group, orders.batch_rows) == ("lake", 500)
    assert customers.topics == [] and customers.topic_pattern == ""


def test_topic_flags_pick_among_the_tables_and_keep_their_entry(lake: Path) -> None:
    settings = load(lake, topic_flags=["cdfbridge.orders"])

    picked = settings.one("rebuild").consumer
    assert (picked.topic, picked.target_table, picked.partition_by) == (
        "cdfbridge.orders",
        "orders_v2",
        "toYYYYMM(day)",
    )


def test_repeated_topic_flags_or_a_topics_list_are_several_topics_with_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load(topic_flags=["cdfbridge.a", "cdfbridge.b"]).listed() == [
        "cdfbridge.a",
        "cdfbridge.b",
    ]

    monkeypatch.setenv("CDFBRIDGE_CONSUMER__TOPICS", "cdfbridge.a, cdfbridge.b.c")
    settings = load()

    assert [settings.for_topic(t).consumer.target_table for t in settings.listed()] == [
        "a",
        "b_c",
    ]


def test_one_topic_flag_overrides_a_topics_list_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__TOPICS", "cdfbridge.a,cdfbridge.b")

    settings = load(topic_flags=["cdfbridge.c"], table="c_table", partition_by="toYYYYMM(day)")

    one = settings.one("rebuild").consumer
    assert (one.topic, one.target_table, one.partition_by) == (
        "cdfbridge.c",
        "c_table",
        "toYYYYMM(day)",
    )


def test_a_pattern_names_topics_at_start_up_and_a_named_topic_must_match_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__TOPIC_PATTERN", r"cdfbridge\.sales\..*")

    assert load().by_pattern
    assert load(topic_flags=["cdfbridge.sales.orders"]).one("status").consumer.topic == (
        "cdfbridge.sales.orders"
    )
    with pytest.raises(ConfigError, match="cdfbridge.hr.staff is neither in"):
        load(topic_flags=["cdfbridge.hr.staff"])


def test_a_pattern_matches_whole_names_and_never_side_or_internal_topics() -> None:
    topics = {
        "cdfbridge.orders",
        "cdfbridge.orders.dlq",
        "cdfbridge.orders.progress",
        "cdfbridge.orders_v2",
        "xcdfbridge.orders",
        "__consumer_offsets",
    }

    assert matching(r"cdfbridge\.orders.*", topics) == ["cdfbridge.orders", "cdfbridge.orders_v2"]
    assert matching(r".*", topics) == [
        "cdfbridge.orders",
        "cdfbridge.orders_v2",
        "xcdfbridge.orders",
    ]


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({}, "no topic: pass --topic"),
        ({"topics": ["a", "b", "a"]}, "topic a is listed twice"),
        ({"topic": "a", "topics": ["a"]}, "topic a is listed twice"),
        ({"topics": ["a", "b"], "table": "t"}, r"consumer.table \(--table.*topics a, b"),
        ({"topics": ["a", "b"], "primary_key": ["id"]}, "set `order_by` in each"),
        ({"topic_pattern": "a.*", "partition_by": "x"}, "the topics matching 'a.*'"),
        ({"topic_pattern": "a(("}, r"consumer.topic_pattern: 'a\(\(' is not a regular"),
    ],
)
def test_inconsistent_topics_are_refused_naming_the_problem_and_the_fix(
    overrides: dict[str, object], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        load(**overrides)  # type: ignore[arg-type]


def test_a_topic_two_tables_entries_would_share_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "twice.toml"
    config.write_text(
        '[[tables]]\ntable = "/lake/a/orders"\nprimary_key = "id"\n\n'
        '[[tables]]\ntable = "/lake/b/orders"\nprimary_key = "id"\n'
    )

    with pytest.raises(ConfigError, match="would all publish to topic cdfbridge.orders"):
        load(config)


@pytest.mark.parametrize(
    ("config", "named"),
    [
        pytest.param(
            "[consumer]\ntopics = ['cdfbridge.sales.orders', 'cdfbridge.sales_orders']\n",
            "cdfbridge.sales.orders and cdfbridge.sales_orders into sales_orders",
            id="default names",
        ),
        pytest.param(
            '[[tables]]\ntable = "/lake/a"\nprimary_key = "id"\ntarget = "t"\n\n'
            '[[tables]]\ntable = "/lake/b"\nprimary_key = "id"\ntarget = "t"\n',
            "cdfbridge.a and cdfbridge.b into t",
            id="one target",
        ),
    ],
)
def test_two_topics_that_would_write_one_table_are_refused(
    tmp_path: Path, config: str, named: str
) -> None:
    file = tmp_path / "shared.toml"
    file.write_text(config)

    with pytest.raises(ConfigError, match=f"one ClickHouse table: {named}. Give each"):
        resolve(load(file))


@pytest.mark.parametrize("command", [["rebuild"], ["reset-offsets", "--to-earliest"]])
def test_rebuild_and_reset_offsets_with_several_topics_ask_for_one_and_exit_2(
    lake: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--config", str(lake), *command]) == 2

    error = capsys.readouterr().err
    assert f"{command[0]} acts on one topic" in error
    assert "topics cdfbridge.orders, crm.customers" in error
    assert "pass --topic NAME" in error


def test_table_flag_with_several_topic_flags_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["--topic", "a", "--topic", "b", "--table", "t", "status"])

    assert code == 2
    assert "consumer.table (--table" in capsys.readouterr().err


def test_the_prefetch_memory_is_the_processs_and_each_topic_gets_an_equal_share(
    lake: Path,
) -> None:
    settings = load(lake, prefetch_mb=600)  # [consumer] prefetch_mb, as --config or env gives it

    shares = [one.consumer.prefetch_mb for one in resolve(settings)]

    assert shares == [300, 300]
    assert settings.for_topic("crm.customers").consumer.prefetch_mb == 600  # read alone


@pytest.mark.parametrize(
    ("share_mb", "partitions", "kbytes"),
    [
        (1024, 3, 128 * 1024),  # one topic: today's 128 MiB per partition, no more
        (300, 3, 100 * 1024),  # a share split among the partitions the topic has
        (300, None, 100 * 1024),  # a topic not there yet: the producer's default of 3
        (10.24, 100, 1024),  # never less than 1 MiB a partition
    ],
)
def test_each_partition_holds_its_part_of_the_topics_share_within_bounds(
    share_mb: float, partitions: int | None, kbytes: int
) -> None:
    assert prefetch_kbytes(share_mb, partitions) == kbytes
    config = consumer_config({}, "g", prefetch_kb=prefetch_kbytes(share_mb, partitions))
    assert config["queued.max.messages.kbytes"] == kbytes
