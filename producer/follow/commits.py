"""The commits of a path table read so far (producer/follow/commit_log.py reads them): what a
range of versions says, each commit parsed from its file's JSON actions."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from producer.follow.commit_files import CommitFiles, commit_files
from producer.follow.plan import estimate_rows

KEPT = 1_000  # commits remembered behind the newest: more than any head span holds
FILES_KEPT = 100  # ... and the files of so many: a head span's (producer/read/file_read.py)


@dataclass(frozen=True)
class Commit:
    version: int
    rows: int | None  # change rows by its operation metrics; None: they do not say
    changes_table: bool  # a metaData or protocol action: schema or features may change
    table_id: str | None = None  # its metaData action's id, when it has one
    files: CommitFiles | None = None  # its changes' files; None: Delta's reader reads it


class Commits:
    """The commits read so far, by version: what they say about a range of versions."""

    def __init__(self) -> None:
        self._by_version: dict[int, Commit] = {}

    def __contains__(self, version: int) -> bool:
        return version in self._by_version

    def add(self, commit: Commit) -> None:
        self._by_version[commit.version] = commit
        for version in [v for v in self._by_version if v < commit.version - KEPT]:
            del self._by_version[version]
        older = self._by_version.get(commit.version - FILES_KEPT)
        if older is not None and older.files is not None:
            self._by_version[older.version] = replace(older, files=None)

    def forget_dropped(self, first: int, last: int) -> None:
        """Forget the commits of first..last whose files were let go (FILES_KEPT behind the
        newest, or that Delta's reader reads anyway), to be read again."""
        newest = max(self._by_version, default=-1)
        for version in range(max(first, 0), min(last, newest - FILES_KEPT) + 1):
            commit = self._by_version.get(version)
            if commit is not None and commit.files is None:
                del self._by_version[version]

    def files(self, first: int, last: int) -> list[tuple[int, CommitFiles]] | None:
        """(version, its files) for first..last, if every commit was read and its files
        are known; else None."""
        found = [self._by_version.get(v) for v in range(first, last + 1)]
        known = [(c.version, c.files) for c in found if c is not None and c.files is not None]
        return known if len(known) == len(found) else None

    def settled(self, first: int, last: int) -> bool:
        """Every commit first..last was read, and none carries metaData or protocol."""
        found = [self._by_version.get(v) for v in range(first, last + 1)]
        return all(c is not None and not c.changes_table for c in found)

    def holds(self, version: int, first: int, last: int) -> bool:
        """The table at version has the schema and protocol of first..last: every commit
        between it and the range, and in the range after first, was read, none with
        metaData or protocol (version may be older than the range, or the head's)."""
        low, high = min(version, first) + 1, max(version, last)
        return low > high or self.settled(low, high)

    def estimates(self, first: int, last: int) -> dict[int, int | None] | None:
        """Change rows per version first..last, if every commit was read; else None."""
        found = [self._by_version.get(v) for v in range(first, last + 1)]
        if any(c is None for c in found):
            return None
        return {c.version: c.rows for c in found if c is not None}


def parsed(version: int, text: str) -> Commit:
    """A commit file's lines (one JSON action each) as a Commit."""
    rows, changes_table, table_id = None, False, None
    actions = [json.loads(line) for line in text.splitlines() if line.strip()]
    for action in actions:
        if "metaData" in action or "protocol" in action:
            changes_table = True
            table_id = action.get("metaData", {}).get("id", table_id)
        elif "commitInfo" in action:
            rows = estimate_rows(action["commitInfo"].get("operationMetrics"))
    return Commit(version, rows, changes_table, table_id, commit_files(actions))
