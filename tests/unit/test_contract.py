"""The version rule and the names derived from a table."""

import pytest

from schemas import changes, naming


@pytest.mark.parametrize(
    ("commit", "change_type", "expected"),
    [
        (7, "delete", 14),
        (7, "insert", 15),
        (7, "update_postimage", 15),
        (7, "update_preimage", 14),
        (7, "snapshot", 15),
    ],
)
def test_version_orders_surviving_rows_after_deletes_of_the_same_commit(
    commit: int, change_type: str, expected: int
) -> None:
    assert changes.version(commit, change_type) == expected


def test_a_later_commit_outranks_any_change_of_an_earlier_one() -> None:
    assert changes.version(8, "delete") > changes.version(7, "insert")


def test_a_newer_generation_outranks_any_change_of_an_older_one() -> None:
    """A table created again starts its versions over: its first rows still win."""
    newest_old = changes.version(2**47 - 1, "insert", generation=1)
    assert changes.version(0, "delete", generation=2) > newest_old
    assert changes.version(7, "insert", generation=0) == changes.version(7, "insert")


@pytest.mark.parametrize(
    ("table", "topic"),
    [
        ("/data/lake/orders", "cdfbridge.orders"),
        ("s3://bucket/sales/orders/", "cdfbridge.orders"),
        ("main.sales.orders", "cdfbridge.main.sales.orders"),
        ("/data/my table", "cdfbridge.my_table"),
    ],
)
def test_default_topic_is_derived_from_the_table(table: str, topic: str) -> None:
    assert naming.default_topic(table) == topic


def test_subjects_and_side_topics_follow_the_topic() -> None:
    assert naming.key_subject("t") == "t-key"
    assert naming.value_subject("t") == "t-value"
    assert naming.progress_topic("t") == "t.progress"
    assert naming.dlq_topic("t") == "t.dlq"
