"""Change types and the version that orders a key's changes downstream.

Several changes of one key can share a `_commit_version`: overwriting a row with the same
key gives a `delete` and an `insert` in one commit. The Delta result is the surviving row,
so the version doubles the commit version and adds one for rows that survive the commit
(an update's preimage does not survive it either):

    _version    = _generation * 2**48
                  + _commit_version * 2 + (0 if _change_type in ('delete', 'update_preimage') else 1)
    _is_deleted = 1 if _change_type in ('delete', 'update_preimage') else 0

A ReplacingMergeTree(_version, _is_deleted) then keeps the insert over the delete of the
same commit, and any later commit over both.

A resync starts a new generation of the topic (producer/resync/resync.py), and a table created
again at its path starts its versions over at 0. `_generation` in the high bits makes any
row of a newer generation outrank every row of an older one, whatever their commits, on
every path that mixes generations: a group reset before the generation's start, an offset
out of range, a table in manual rebuild mode. A generation started by a release whose values
had no `_generation` keeps that shape to its end (every value of a generation has one shape,
so none of its rows outranks another of its own by the upgrade), and its tables keep the
rule without the generation term until the next generation's schema adds the column.

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

# The metadata columns of a value, after the table's own columns (_generation in every
# generation started by this release, see above).
CHANGE_TYPE: Final = "_change_type"
COMMIT_VERSION: Final = "_commit_version"
COMMIT_TIMESTAMP: Final = "_commit_timestamp"
GENERATION: Final = "_generation"
METADATA_COLUMNS: Final = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP, GENERATION)
GENERATION_SHIFT: Final = 2**48  # commit versions stay below 2**47

# Derived downstream, never sent.
VERSION: Final = "_version"
IS_DELETED: Final = "_is_deleted"


def version(commit_version: int, change_type: str, generation: int = 0) -> int:
    """The ordering version of one change (see the module docstring)."""
    survives = 0 if change_type in (DELETE, UPDATE_PREIMAGE) else 1
    return generation * GENERATION_SHIFT + commit_version * 2 + survives


def is_deleted(change_type: str) -> bool:
    return change_type in (DELETE, UPDATE_PREIMAGE)


# The same rules as ClickHouse expressions, for the MATERIALIZED columns of the tables that
# the consumer and the Kafka engine write.
def version_sql(generation: bool) -> str:
    """The version rule, with the generation term for a table that has `_generation`."""
    within = (
        f"toUInt64({COMMIT_VERSION}) * 2 + ({CHANGE_TYPE} NOT IN ('{DELETE}', '{UPDATE_PREIMAGE}'))"
    )
    return f"toUInt64({GENERATION}) * {GENERATION_SHIFT} + {within}" if generation else within


IS_DELETED_SQL: Final = f"toUInt8({CHANGE_TYPE} IN ('{DELETE}', '{UPDATE_PREIMAGE}'))"
