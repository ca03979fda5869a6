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


def test_an_as_of_round_names_duplicate_keys_and_is_not_equal() -> None:
    report = Report(
        "/lake/t",
        3,
        "default.t",
        Side(20, 1, 20),
        Side(20, 2, 20),
        duplicate=2,
        duplicate_keys=[{"id": "03"}, {"id": "07"}],
        keyed=True,
    )
    said = report.render()
    assert not report.equal
    assert "NOT EQUAL: 0 lost, 0 extra, 0 wrong, 2 duplicate" in said
    assert "duplicate (more than one row in Delta): id='03', id='07'" in said
    assert "--repair leaves these keys alone" in said


def test_buckets_that_differed_only_while_keys_moved_are_equal_once_named() -> None:
    """Step 1's totals differ, step 2 named no key: the keys, not the totals, decide."""
    report = Report("/lake/t", 3, "default.t", Side(20, 1, 20), Side(20, 2, 20), keyed=True)
    assert report.equal and report.render().endswith("equal")
    assert not Report("/lake/t", 3, "default.t", Side(20, 1, 20), Side(20, 2, 20)).equal
