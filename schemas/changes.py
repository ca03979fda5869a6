"""Change types and the version that orders a key's changes downstream.

Several changes of one key can share a `_commit_version`: overwriting a row with the same
key gives a `delete` and an `insert` in one commit. The Delta result is the surviving row,
so the version doubles the commit version and adds one for rows that survive the commit
(an update's preimage does not survive it either):

    _version    = _commit_version * 2 + (0 if _change_type in ('delete', 'update_preimage') else 1)
    _is_deleted = 1 if _change_type in ('delete', 'update_preimage') else 0

A ReplacingMergeTree(_version, _is_deleted) then keeps the insert over the delete of the
same commit, and any later commit over both.

An UPDATE or MERGE may rewrite primary-key columns: the row leaves its old key. The old key
is then deleted at that commit: the producer publishes the preimage of every key that no
row survives in the commit as a `delete` (with include_preimage, every preimage is published
as `update_preimage`, which deletes just the same). A preimage whose key survives the commit
(the common update) is not published by default, and would lose to the surviving row anyway.
"""

from __future__ import annotations

from typing import Final

INSERT: Final = "insert"
UPDATE_PREIMAGE: Final = "update_preimage"
UPDATE_POSTIMAGE: Final = "update_postimage"
DELETE: Final = "delete"
SNAPSHOT: Final = "snapshot"  # a row of the table's state at a version, from --snapshot

CHANGE_TYPES: Final = (INSERT, UPDATE_PREIMAGE, UPDATE_POSTIMAGE, DELETE, SNAPSHOT)

# The metadata columns every value carries, after the table's own columns.
CHANGE_TYPE: Final = "_change_type"
COMMIT_VERSION: Final = "_commit_version"
COMMIT_TIMESTAMP: Final = "_commit_timestamp"
METADATA_COLUMNS: Final = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)

# Derived downstream, never sent.
VERSION: Final = "_version"
IS_DELETED: Final = "_is_deleted"


def version(commit_version: int, change_type: str) -> int:
    """The ordering version of one change (see the module docstring)."""
    return commit_version * 2 + (0 if change_type in (DELETE, UPDATE_PREIMAGE) else 1)


def is_deleted(change_type: str) -> bool:
    return change_type in (DELETE, UPDATE_PREIMAGE)


# The same rules as ClickHouse expressions, for MATERIALIZED columns and Kafka-engine views.
VERSION_SQL: Final = (
    f"toUInt64({COMMIT_VERSION}) * 2 + ({CHANGE_TYPE} NOT IN ('{DELETE}', '{UPDATE_PREIMAGE}'))"
)
IS_DELETED_SQL: Final = f"toUInt8({CHANGE_TYPE} IN ('{DELETE}', '{UPDATE_PREIMAGE}'))"
