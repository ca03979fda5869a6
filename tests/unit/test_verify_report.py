"""What verify's report says to a person: a key that is not unique in the Delta table is
named as such, not only as values that differ."""

from __future__ import annotations

from verify.report import Report, Side


def test_a_key_that_is_not_unique_in_delta_is_said_to_be_so() -> None:
    report = Report("/lake/t", 1, "default.t", Side(1_000, 1, 900), Side(900, 2, 900), wrong=75)
    said = report.render()
    assert "NOT EQUAL" in said
    assert "the key is not unique in the Delta table: 1,000 rows hold 900 keys" in said


def test_an_equal_report_says_nothing_of_keys() -> None:
    said = Report("/lake/t", 1, "default.t", Side(5, 1, 5), Side(5, 1, 5)).render()
    assert said.endswith("equal") and "not unique" not in said
