"""A consumer's tables waiting for their producer's first schemas ask the registry at most
LOOKUPS_PER_S times a second in all (consumer/group/unpublished.py)."""

from contextlib import ExitStack

from consumer.group.errors import NotPublishedYetError
from consumer.group.unpublished import LOOKUPS_PER_S, Unpublished


def test_a_table_alone_looks_every_second_and_many_share_the_lookups() -> None:
    unpublished = Unpublished()
    with unpublished.waiting():
        assert unpublished.poll_s() == NotPublishedYetError.poll_s == 1.0
    tables = int(LOOKUPS_PER_S * 10)
    with ExitStack() as waiting:
        for _ in range(tables):
            waiting.enter_context(unpublished.waiting())
        assert unpublished.count == tables
        assert tables / unpublished.poll_s() == LOOKUPS_PER_S  # the process's looks a second
    assert unpublished.count == 0


def test_a_table_that_stops_waiting_leaves_the_count_even_when_it_fails() -> None:
    unpublished = Unpublished()
    try:
        with unpublished.waiting():
            raise RuntimeError("stopped")
    except RuntimeError:
        pass
    assert unpublished.count == 0
