"""A failing table's back-off: doubling while it keeps failing, from the start again once an
attempt had run long enough to count as a recovery."""

from producer.lake import HEALTHY_S, TABLE_MAX_BACKOFF_S, Backoff


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
