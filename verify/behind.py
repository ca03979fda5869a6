"""How far a replica, or its proof, is behind its Delta table: the age of the oldest Delta
commit after a version, and 0 while that version is the table's latest. A table with no
new commit is not behind, however old its last commit is: an idle table is fresh, and a
table whose consumer or producer stalled while Delta moves grows older every look.

ClickHouse looks for the commit file after the version itself where it reads the table
(services/lake.py `commit_time`: one small read, no listing); elsewhere (ADLS, a catalog
name) delta-rs reads the log's history (verify/snapshot.py `commit_after`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from services.clickhouse_errors import sorted_errors
from services.lake import LakeTable, LakeUnreadableError, commit_time, locate
from verify import snapshot
from verify.settings import VerifySettings


class Behind:
    """One table's look for the commit after a version; a commit found is kept, since a
    version's successor never changes."""

    def __init__(self, settings: VerifySettings) -> None:
        self.settings = settings
        self._after: tuple[int, int] | None = None  # (version, commit ms of the next one)

    def first_after(self, client: Any, version: int) -> int | None:
        """The commit time (ms) of `version + 1`, or None while `version` is the latest."""
        if self._after is not None and self._after[0] == version:
            return self._after[1]
        lake = self._lake
        if lake is None:
            found = snapshot.commit_after(self.settings, version)
        else:
            with sorted_errors(self.settings.clickhouse.url):
                found = commit_time(client, lake, version + 1)
        if found is not None:
            self._after = (version, found)
        return found

    @cached_property
    def _lake(self) -> LakeTable | None:
        """How ClickHouse reads the table; None where it cannot (delta-rs reads its log)."""
        s = self.settings
        try:
            return locate(s.verify.table, s.storage)
        except LakeUnreadableError:
            return None
