"""The looks of a lake's idle tables for their next commit files, grouped: one call per file
system for every table whose look is due, instead of a py4j `exists` call per table
(producer/follow/commit_log.py).

A table with nothing new asks for a look at its next commit file after its idle wait
(producer/follow/idle.py) and sleeps until the look is done. The process's one Probes thread
wakes at the first look due (and every TICK_S while tables wait, to see which are told to
stop); it takes the looks that are due, and those of tables told to stop, and:

1. groups the due looks by file system (its URI and the JVM's instance);
2. asks each file system once, with Hadoop's `globStatus` over `{path,path,...}`. A pattern
   of literal paths is expanded into one `getFileStatus` per path inside the JVM, so
   local paths, s3a:// and abfss:// alike answer each path as an `exists` would;
3. hands each table whether its file is there. A table whose file is not there is looked
   at again after its next idle wait, without waking it, until it must wake anyway (its
   whole log's check, once a minute: Idle.wake_by). A table told to stop, or whose group's
   call failed, gets None and looks for itself, as it would without Probes: the failure
   is then raised in its own thread and classified there.

A look is done at its due time, together with every other look due within TICK_S after
it: a table's poll is never later than its idle wait and at most TICK_S earlier, and each
file system gets about one call per TICK_S at most. A path with a character that a pattern
would read (`{}[]*?\\,:`) is not grouped (CommitLog.probe says None).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from producer import metrics

TICK_S = 0.2  # the pace of the grouped looks while tables wait
UNGROUPED = set("{}[]*?\\,:")  # characters a glob pattern would read: such paths look alone


@dataclass(frozen=True)
class Probe:
    """A look at one commit file: version's, at path (without scheme and authority) on the
    file system fs (a py4j handle), whose URI and JVM instance make group."""

    version: int
    path: str
    group: str
    fs: Any


class Waits(Protocol):
    """An idle table's waits between looks (producer/follow/idle.py Idle)."""

    def next_wait_s(self) -> float:
        """The wait before the next look."""
        ...

    def wake_by(self) -> float:
        """When (by the monotonic clock) the table must wake whatever the looks find."""
        ...


@dataclass(eq=False)
class _Ask:
    probe: Probe
    due: float
    stop: threading.Event
    waits: Waits | None
    found: bool | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Probes:
    """The process's grouped looks at the tables' next commit files."""

    def __init__(self, path_of: Callable[[str], Any], clock: Callable[[], float] = time.monotonic):
        """path_of: Hadoop's Path constructor through the JVM's gateway."""
        self._path_of, self._clock = path_of, clock
        self._asks: list[_Ask] = []
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def look(
        self, probe: Probe, wait_s: float, stop: threading.Event, waits: Waits | None = None
    ) -> bool | None:
        """Whether probe's file is there, looked at no sooner than wait_s from now, with the
        other tables' looks then due; None: stop was set, or the grouped call failed.
        waits: while the file is not there, look again after each of its waits, until its
        wake_by(), without waking the table in between."""
        ask = _Ask(probe, self._clock() + wait_s, stop, waits)
        with self._changed:
            if self._closed:
                return None
            self._queue([ask])
        ask.done.wait()
        return ask.found

    def _queue(self, asks: list[_Ask]) -> None:
        """Holding the lock: asks wait for their looks."""
        self._asks += asks
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="probes", daemon=True)
            self._thread.start()
        if len(self._asks) == len(asks):  # the thread waits for one; else it keeps its ticks
            self._changed.notify_all()

    def close(self) -> None:
        """Answer every waiting look with None and end the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._asks and not self._closed:
                    self._changed.wait()
                if self._closed:
                    _release(self._asks)
                    return
                now, earliest = self._clock(), min(a.due for a in self._asks)
                if earliest > now:  # woken by the first due look, or to see the stops
                    self._changed.wait(min(earliest - now, TICK_S))
                    now = self._clock()
                horizon = now + TICK_S if earliest <= now else now
                due, self._asks = _split(self._asks, horizon)
            self._answer(due)

    def _answer(self, due: list[_Ask]) -> None:
        groups: dict[str, list[_Ask]] = defaultdict(list)
        for ask in due:
            if ask.stop.is_set():  # a table told to stop gets None at once
                ask.found = None
            else:
                groups[ask.probe.group].append(ask)
        again: set[_Ask] = set()
        try:
            for asks in groups.values():
                there = self._group_there(asks)
                for ask in asks:
                    ask.found = None if there is None else ask.probe.path in there
                    if ask.found is False and self._again(ask):
                        again.add(ask)
        finally:
            for ask in due:
                if ask not in again:
                    ask.done.set()
        if not again:
            return
        with self._changed:
            if self._closed:
                _release(again)
            else:
                self._queue(list(again))

    def _again(self, ask: _Ask) -> bool:
        """Whether ask, not there, is looked at again without waking its table: its next
        look falls before its table's wake_by()."""
        if ask.waits is None:
            return False
        ask.due = self._clock() + ask.waits.next_wait_s()
        return ask.due < ask.waits.wake_by()

    def _group_there(self, asks: list[_Ask]) -> set[str] | None:
        """Which of the asks' paths (on one file system) are there; None if the call
        failed: each table then looks for itself, and meets the failure there."""
        try:
            return self._there(asks[0].probe.fs, {a.probe.path for a in asks})
        except Exception as exc:  # noqa: BLE001 - raised again in each table's own look
            metrics.event("probes_failed", level=logging.DEBUG, error=type(exc).__name__)
            return None

    def _there(self, fs: Any, paths: set[str]) -> set[str]:
        """Which of paths (on fs) are there, in one call (none found: null, or no status)."""
        statuses = fs.globStatus(self._path_of("{" + ",".join(sorted(paths)) + "}"))
        return {str(s.getPath().toUri().getPath()) for s in statuses or []}


def _split(asks: list[_Ask], now: float) -> tuple[list[_Ask], list[_Ask]]:
    """(the asks due at now or told to stop, the others)."""
    split: tuple[list[_Ask], list[_Ask]] = ([], [])
    for ask in asks:
        split[0 if ask.due <= now or ask.stop.is_set() else 1].append(ask)
    return split


def _release(asks: Iterable[_Ask]) -> None:
    """Answer asks with None: their tables look for themselves (or stop)."""
    for ask in asks:
        ask.found = None
        ask.done.set()
