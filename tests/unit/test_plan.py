"""Cutting version ranges into chunks: bounded in rows, in bytes and in versions."""

from collections.abc import Mapping

import pytest

from producer.follow.plan import Chunk, estimate_rows, plan, rows_per_chunk


def chunks(
    estimates: Mapping[int, int | None], max_rows: int = 100, max_versions: int = 10
) -> list[Chunk]:
    return list(plan(min(estimates), max(estimates), estimates, max_rows, max_versions))


def test_small_versions_share_a_chunk_up_to_the_row_bound() -> None:
    assert chunks({0: 40, 1: 40, 2: 40, 3: 10}) == [Chunk(0, 1), Chunk(2, 3)]


def test_a_chunk_never_spans_more_than_max_versions() -> None:
    assert chunks({v: 0 for v in range(5)}, max_versions=2) == [
        Chunk(0, 1),
        Chunk(2, 3),
        Chunk(4, 4),
    ]


def test_a_version_over_the_bound_is_read_in_slices_of_its_own_chunk() -> None:
    assert chunks({0: 10, 1: 250, 2: 10}) == [Chunk(0, 0), Chunk(1, 1, slices=3), Chunk(2, 2)]


def test_a_version_without_an_estimate_gets_a_chunk_of_its_own_to_be_counted() -> None:
    assert chunks({0: 10, 1: None, 2: 10}) == [
        Chunk(0, 0),
        Chunk(1, 1, sized=False),
        Chunk(2, 2),
    ]


@pytest.mark.parametrize(
    ("max_rows", "max_bytes", "row_bytes", "expected"),
    [
        (500_000, 128 * 2**20, None, 500_000),  # width not known yet: rows alone
        (500_000, 128 * 2**20, 80.0, 500_000),  # narrow rows: the row bound binds
        (500_000, 128 * 2**20, 12_000.0, 11_184),  # wide rows: the byte bound binds
        (500_000, 1_000, 5_000.0, 1),  # one row wider than the bound still moves
    ],
)
def test_rows_per_chunk_is_the_tighter_of_rows_and_bytes(
    max_rows: int, max_bytes: int, row_bytes: float | None, expected: int
) -> None:
    assert rows_per_chunk(max_rows, max_bytes, row_bytes) == expected


def test_wide_rows_cut_a_backlog_into_more_and_smaller_chunks() -> None:
    estimates = {v: 10_000 for v in range(4)}
    narrow = rows_per_chunk(500_000, 128 * 2**20, 90.0)
    wide = rows_per_chunk(500_000, 128 * 2**20, 12_000.0)
    assert chunks(estimates, max_rows=narrow) == [Chunk(0, 3)]
    assert chunks(estimates, max_rows=wide) == [Chunk(v, v) for v in range(4)]


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        (None, None),
        ({}, None),
        ({"numFiles": "1"}, None),  # says nothing about rows
        ({"numOutputRows": "250000"}, 250_000),  # Spark write
        ({"num_added_rows": "7"}, 7),  # delta-rs write
        ({"numTargetRowsInserted": "5", "numTargetRowsUpdated": "3"}, 11),  # pre- and post-image
        ({"num_target_rows_deleted": "4", "num_target_rows_updated": "1"}, 6),  # delta-rs merge
    ],
)
def test_row_estimate_from_operation_metrics(
    metrics: dict[str, str] | None, expected: int | None
) -> None:
    assert estimate_rows(metrics) == expected
