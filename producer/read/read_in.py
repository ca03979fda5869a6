"""Which snapshot of a path table a range of versions is read in, and the shape its files
are read with (producer/read/file_read.py).

A range is read in the schema of its last version. No snapshot need be built for it where
the commit log (producer/follow/commit_log.py) read every commit between a snapshot already
at hand and the range, and in the range after its first, none with metaData or protocol:
- the snapshot the last read was read in;
- at a start, the table's head as Kernel loaded it (producer/follow/log_state.py), which
  is no Delta snapshot: Delta's are built only if Delta's reader must read the range.
Else Delta's snapshots of the range's ends: the latest one where it holds for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from producer.follow.commit_log import CommitLog
from producer.follow.log_state import LogState
from producer.read.file_read import Shape, actions_of, shape_of


@dataclass(frozen=True)
class Ends:
    """Delta's snapshots of a range's first and last versions (None: not built, Kernel's
    head holds for the range), and whether its files may be read (no commit after its first
    changes the table)."""

    start: Any
    end: Any
    files: bool


class ReadIn:
    """The snapshot the last read was read in, and the shape of its files."""

    def __init__(
        self,
        delta_log: Callable[[], Any],
        none: Callable[[], Any],
        commits: CommitLog | None,
        state: LogState | None,
        read_files: bool,
    ) -> None:
        """delta_log: the table's DeltaLog, loaded on first use; none: Scala's None."""
        self._log, self._none, self._commits, self._state = delta_log, none, commits, state
        self._read_files = read_files
        # The last read's snapshot (not column-mapped): its version, and Delta's snapshot
        # where Delta built it; and the shape its files are read with.
        self._end: tuple[int, Any] | None = None
        self.shape: Shape | None = None

    def kept(self, first: int, last: int) -> Ends | None:
        """The ends of a range the last read's snapshot holds for, or Kernel's head (a
        start's first read); None where neither does."""
        if self._end is not None and self.holds(self._end[0], first, last):
            return Ends(self._end[1], self._end[1], True)
        state, commits = self._state, self._commits
        if state is None or commits is None or not self.holds(state.version, last, last):
            return None
        if not commits.settled(first + 1, last) or _mapped(state.metadata):
            return None
        self._end, self.shape = (state.version, None), self._shaped(state.protocol, state.metadata)
        return Ends(None, None, True)

    def snapshots(self, first: int, last: int) -> Ends | None:
        """The range's ends as Delta's snapshots; None: column-mapped (the public reader
        picks the schema mode for those)."""
        log, none = self._log(), self._none()
        latest = log.update(False, none, none)
        # The latest snapshot is the end's when no commit after the range changes the
        # table: a first read ending before the head builds no snapshot of its own.
        end = latest if self.holds(int(latest.version()), last, last) else self._at(last)
        # No commit after first changes the table: first's snapshot is end's.
        unchanged = self._commits is not None and self._commits.settled(first + 1, last)
        start = end if unchanged else self._at(first)
        (protocol, metadata), before = actions_of(end), actions_of(start)[1]
        if _mapped(metadata) or _mapped(before):
            return None
        self._end, self.shape = (int(end.version()), end), self._shaped(protocol, metadata)
        # A first read, or one after the table changed: from its files too, in end's
        # schema as Delta's reader reads it, where no commit after first changes it.
        return Ends(start, end, unchanged)

    def holds(self, version: int, first: int, last: int) -> bool:
        """The snapshot at version has the schema and protocol of first..last, as the commit
        log tells (Commits.holds); without one, only the range of version alone."""
        if self._commits is None:
            return version == first == last
        return self._commits.holds(version, first, last)

    def _at(self, version: int) -> Any:
        none = self._none()
        return self._log().getSnapshotAt(version, none, none, False)

    def _shaped(self, protocol: dict[str, Any], metadata: dict[str, Any]) -> Shape | None:
        return shape_of(protocol, metadata) if self._read_files else None


def _mapped(metadata: dict[str, Any]) -> bool:
    """Whether the table's columns are mapped (by id or name)."""
    mode = (metadata.get("configuration") or {}).get("delta.columnMapping.mode", "none")
    return str(mode) != "none"
