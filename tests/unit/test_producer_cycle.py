"""Which tables' reads a cycle takes: oldest first, within its bytes, the first always."""

from typing import Any

import pytest

from producer.read.cycle import Cycle, _Read
from producer.read.union import balanced_union


def cycle_with(*sizes: int, max_bytes: int = 100) -> tuple[Cycle, list[_Read]]:
    cycle = Cycle(spark=None, max_bytes=max_bytes)  # type: ignore[arg-type] # takes no job
    reads = [_Read(frame=f"table {i}", nbytes=n) for i, n in enumerate(sizes)]  # type: ignore[arg-type]
    cycle._waiting.extend(reads)
    return cycle, reads


def frames(reads: list[_Read]) -> list[Any]:
    return [r.frame for r in reads]


def test_a_cycle_takes_the_oldest_reads_that_fit_and_leaves_the_rest_for_the_next() -> None:
    cycle, reads = cycle_with(40, 50, 30, 5)
    assert frames(cycle._take()) == ["table 0", "table 1"]  # 40 + 50; 30 more would pass 100
    assert frames(cycle._take()) == ["table 2", "table 3"]


def test_a_read_larger_than_the_bound_is_taken_alone_rather_than_never() -> None:
    cycle, _ = cycle_with(500, 10)
    assert frames(cycle._take()) == ["table 0"]
    assert frames(cycle._take()) == ["table 1"]


def test_a_closed_cycle_takes_nothing_once_no_read_waits() -> None:
    cycle, _ = cycle_with(10)
    cycle.close()
    assert frames(cycle._take()) == ["table 0"]  # served before the thread ends
    assert cycle._take() == []


def test_a_cycle_waits_a_short_while_for_tables_at_their_heads_without_a_read() -> None:
    cycle, _ = cycle_with(10)
    cycle.at_head("a", True)
    cycle.at_head("b", True)  # b sends nothing: the cycle goes on once it is quiet
    assert frames(cycle._take()) == ["table 0"]


class Rows:
    """Stands in for a DataFrame only to record the order union() puts its rows in."""

    def __init__(self, *rows: int) -> None:
        self.rows = list(rows)

    def union(self, other: "Rows") -> "Rows":
        return Rows(*self.rows, *other.rows)


@pytest.mark.parametrize("reads", [1, 2, 3, 8, 13])
def test_the_union_built_pairwise_holds_every_read_once_in_order(reads: int) -> None:
    frames: list[Any] = [Rows(i) for i in range(reads)]

    assert balanced_union(frames).rows == list(range(reads))
