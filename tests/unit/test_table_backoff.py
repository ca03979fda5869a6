"""A failing table's back-off: doubling while it keeps failing, from the start again once an
attempt had run long enough to count as a recovery. And the turns of tables to set up."""

import threading
import time

from producer.lake.pacing import HEALTHY_S, TABLE_MAX_BACKOFF_S, Backoff, Starts, starting_at_once


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fail_after(backoff: Backoff, clock: Clock, ran_s: float) -> float:
    backoff.attempt()
    clock.now += ran_s
    backoff.failed()
    return backoff.delay_s()


def test_quick_failures_double_the_delay_up_to_the_ceiling() -> None:
    clock = Clock()
    backoff = Backoff(clock)

    delays = [fail_after(backoff, clock, 1.0) for _ in range(12)]

    assert delays[:4] == [0.5, 1.0, 2.0, 4.0]
    assert delays[-1] == TABLE_MAX_BACKOFF_S


def test_a_failure_after_a_healthy_run_starts_the_back_off_over() -> None:
    clock = Clock()
    backoff = Backoff(clock)
    for _ in range(10):
        fail_after(backoff, clock, 1.0)

    assert fail_after(backoff, clock, HEALTHY_S) == 0.5
    assert fail_after(backoff, clock, 1.0) == 1.0


def test_the_driver_heap_and_the_chunk_size_bound_the_tables_starting_at_once() -> None:
    mib = 2**20
    assert starting_at_once(1024 * mib, 128 * mib) == 4
    assert starting_at_once(989 * mib, 128 * mib) == 4  # -Xmx1g as the JVM reports it
    assert starting_at_once(4096 * mib, 128 * mib) == 16
    assert starting_at_once(1024 * mib, 32 * mib) == 16  # smaller chunks, more at once
    assert starting_at_once(1024 * mib, 512 * mib) == 1
    assert starting_at_once(512 * mib, 2048 * mib) == 1  # at least one always starts


def test_tables_set_up_a_few_at_a_time_and_a_turn_is_given_back_once() -> None:
    starts, stop = Starts(size=2), threading.Event()
    with starts.turn(stop) as first, starts.turn(stop) as second:
        assert first is not None and second is not None
        waiting: list[object] = []
        third = threading.Thread(target=lambda: _take(starts, stop, waiting))
        third.start()
        third.join(0.5)
        assert third.is_alive()  # both turns taken
        first()
        first()  # given back once: a second call gives nothing more
        third.join(5)
        assert not third.is_alive() and len(waiting) == 1 and waiting[0] is not None
    with starts.turn(stop) as again, starts.turn(stop) as twice:
        assert again is not None and twice is not None  # both back after leaving


def test_a_table_waiting_for_its_turn_leaves_when_the_process_stops() -> None:
    starts, stop = Starts(size=1), threading.Event()
    with starts.turn(stop):
        stop.set()
        with starts.turn(stop) as turn:
            assert turn is None


def _take(
    starts: Starts, stop: threading.Event, taken: list[object], ticket: int | None = None
) -> None:
    with starts.turn(stop, ticket) as turn:
        taken.append(turn)


def test_turns_go_in_the_order_of_the_tickets_not_of_the_threads() -> None:
    starts, stop = Starts(size=1), threading.Event()
    held = starts.ticket()
    tickets = [starts.ticket() for _ in range(8)]
    order: list[int] = []

    def take(ticket: int) -> None:
        with starts.turn(stop, ticket) as turn:
            assert turn is not None
            order.append(ticket)
            time.sleep(0.01)

    with starts.turn(stop, held):  # the first ticket, taken while the others start
        waiting = [threading.Thread(target=take, args=(t,)) for t in reversed(tickets)]
        for thread in waiting:  # the latest ticket first
            thread.start()
            time.sleep(0.05)
    for thread in waiting:
        thread.join(5)
    assert order == tickets


def test_a_ticket_that_leaves_when_its_table_stops_keeps_no_later_one_waiting() -> None:
    starts, stop, leaving = Starts(size=1), threading.Event(), threading.Event()
    held, gone, after = starts.ticket(), starts.ticket(), starts.ticket()
    left: list[object] = []
    taken: list[object] = []
    with starts.turn(stop, held):
        leaver = threading.Thread(target=lambda: _take(starts, leaving, left, gone))
        waiter = threading.Thread(target=lambda: _take(starts, stop, taken, after))
        leaver.start()
        waiter.start()
        leaving.set()
        leaver.join(5)
        assert left == [None]  # it left without a turn
    waiter.join(5)
    assert not waiter.is_alive() and len(taken) == 1 and taken[0] is not None


def test_a_later_ticket_waits_for_an_earlier_one_whose_table_has_not_asked_yet() -> None:
    starts, stop = Starts(size=1), threading.Event()
    first, second = starts.ticket(), starts.ticket()
    order: list[int] = []

    def take(ticket: int) -> None:
        with starts.turn(stop, ticket):
            order.append(ticket)

    late = threading.Thread(target=take, args=(second,))
    late.start()  # asks before the first ticket's table does
    late.join(0.5)
    assert late.is_alive() and order == []  # the first ticket keeps its place
    take(first)
    late.join(5)
    assert order == [first, second]
