"""An idle table's waits for its next commit: polls that grow apart while it stays idle
(`Idle`), each a look at its next commit file grouped with the other tables' (producer/follow/
probes.py) where its log allows (`wait_for_change`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from producer.follow.commit_log import CommitLog
from producer.follow.probes import Probes, Waits


def wait_for_change(
    commits: CommitLog | None,
    after: int,
    waits: Waits,
    stop: threading.Event,
    probes: Probes | None,
) -> bool:
    """Wait waits' next wait for the table to change after version `after`; True: stop
    was set. A path table's next commit file is then looked at with the other tables'
    (probes), again after each next wait while it is not there, and its commit log's next
    read takes the answer."""
    wait_s = waits.next_wait_s()
    if commits is None or probes is None or (probe := commits.probe(after)) is None:
        return stop.wait(wait_s)
    found = probes.look(probe, wait_s, stop, waits)
    if found is not None:
        commits.looked(probe.version, found)
    return stop.is_set()


class Idle:
    """An idle table's polls, which grow apart while it stays idle: the wait doubles from
    poll_interval_s up to idle_poll_max_s, and a new commit sets it back. A lake of idle
    tables then costs few calls, and a table that commits often is polled as set.

    Its log is loaded whole (DeltaSource.latest_version) at the first poll that finds no
    commit file (the next one may be gone while later ones are there: the log cleaned up
    behind a checkpoint), then once every LOG_CHECK_S while none is found. Only that finds a
    table created again whose log has not reached the next version yet."""

    LOG_CHECK_S = 60.0

    def __init__(
        self, poll_interval_s: float, max_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.first_s, self.max_s = poll_interval_s, max(max_s, poll_interval_s)
        self.wait_s, self.clock = poll_interval_s, clock
        self.checked: float | None = None  # when the log was last loaded, or a commit found

    def check_log(self, found: bool) -> bool:
        """Whether to load the log whole after a poll that found (or not) new commits."""
        now = self.clock()
        if found:
            self.wait_s, self.checked = self.first_s, now
            return False
        if self.checked is None or now - self.checked >= self.LOG_CHECK_S:
            self.checked = now
            return True
        return False

    def next_wait_s(self) -> float:
        """The wait before the next poll; the one after is longer, up to max_s."""
        wait, self.wait_s = self.wait_s, min(self.wait_s * 2, self.max_s)
        return wait

    def wake_by(self) -> float:
        """When the table polls itself however grouped looks go on (producer/follow/probes.py):
        its next load of the whole log."""
        return self.clock() if self.checked is None else self.checked + self.LOG_CHECK_S
