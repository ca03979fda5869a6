"""The reader's hand-off: an iterator run in a thread of its own, one item ahead, whose end
or exception always reaches the iterating side, even once stopping."""

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from producer.lake.prefetch import STOP_POLL_S, Prefetch

WAIT_S = 5.0  # for a thread that should end at once; a failing test waits this long


class Boom(Exception):  # noqa: N818 - a made-up failure
    pass


def counting(pulled: list[int], n: int) -> Iterator[int]:
    for i in range(n):
        pulled.append(i)
        yield i


def eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_items_arrive_in_order_then_the_end() -> None:
    with Prefetch(iter(range(5))) as items:
        assert list(items) == [0, 1, 2, 3, 4]


def test_an_exception_arrives_after_the_items_before_it() -> None:
    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise Boom("the driver died")

    got: list[int] = []
    with Prefetch(failing()) as items, pytest.raises(Boom, match="the driver died"):
        for item in items:
            got.append(item)

    assert got == [1, 2]


def test_the_thread_runs_one_item_ahead() -> None:
    pulled: list[int] = []
    with Prefetch(counting(pulled, 100)) as items:
        eventually(lambda: len(pulled) == 2, "one buffered and one waiting for room")
        time.sleep(0.2)
        assert len(pulled) == 2

        it = iter(items)
        assert next(it) == 0
        eventually(lambda: len(pulled) == 3, "room for one more")
        time.sleep(0.2)
        assert len(pulled) == 3


def test_closing_drops_the_held_item_and_ends_the_iterator_in_its_thread() -> None:
    pulled: list[int] = []
    closed_in: list[str] = []

    def generator() -> Iterator[int]:
        try:
            yield from counting(pulled, 100)
        finally:
            closed_in.append(threading.current_thread().name)

    prefetch = Prefetch(generator(), name="reader")
    with prefetch as items:
        it = iter(items)
        assert next(it) == 0
        eventually(lambda: len(pulled) == 3, "item 1 buffered, item 2 held")
        prefetch.close()

        assert list(it) == [1]  # what was buffered, then the end; item 2 is dropped
    assert closed_in == ["reader"]
    assert len(pulled) == 3


def test_a_stop_event_set_elsewhere_ends_a_thread_waiting_for_room() -> None:
    stop = threading.Event()
    pulled: list[int] = []
    prefetch = Prefetch(counting(pulled, 100), stop=stop)
    with prefetch:
        eventually(lambda: len(pulled) == 2, "one buffered, one waiting for room")
        stop.set()  # as a signal handler does: nobody calls close()
        began = time.monotonic()

        assert list(prefetch) == [0]  # the end arrives once the thread has stopped
        assert time.monotonic() - began < STOP_POLL_S + 1.0
        assert len(pulled) == 2


def test_an_exception_raised_while_stopping_still_reaches_the_iterating_side() -> None:
    resumed, release = threading.Event(), threading.Event()

    def dying() -> Iterator[int]:
        yield 1
        resumed.set()
        release.wait(WAIT_S)
        raise Boom("the JVM went away with the signal")

    prefetch = Prefetch(dying())
    with prefetch:
        it = iter(prefetch)
        assert next(it) == 1
        assert resumed.wait(WAIT_S)  # the thread is inside the iterator
        prefetch.close()
        release.set()

        with pytest.raises(Boom, match="went away"):
            next(it)


def test_an_exception_is_delivered_whatever_the_buffer_holds() -> None:
    raised = threading.Event()

    def failing_at_once() -> Iterator[int]:
        yield 1
        raised.set()
        raise Boom("after one")

    prefetch = Prefetch(failing_at_once())
    with prefetch:
        assert raised.wait(WAIT_S)  # 1 buffered, then the failure: the buffer was full
        time.sleep(0.1)
        it = iter(prefetch)

        assert next(it) == 1
        with pytest.raises(Boom):
            next(it)
