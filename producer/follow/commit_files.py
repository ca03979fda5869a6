"""Which files a commit's changes come from, by the rule of Delta's change-feed reader
(CDCReader.changesToDF, Delta 4.4.0), read from the commit's own actions.

Per commit:
1. with at least one `cdc` action, the changes are the rows of its `cdc` files, each
   carrying its `_change_type`; the commit's `add` and `remove` actions give nothing;
2. otherwise a MERGE whose metrics say no row was inserted, updated or deleted gives
   nothing (Delta's guard against no-op rewrites);
3. otherwise every row of each `add` with `dataChange` is an `insert`, and every row of each
   `remove` with `dataChange` a `delete`.

A commit whose files cannot be read by that rule alone is `None` (Delta's own reader reads
it): a deletion vector on any `add` or `remove` read, one path both added and removed, or
added twice (Delta pairs those), a `remove` without its partition values and size
(Delta refuses it), a path that Spark would take for a pattern, or more files than a commit
at a table's head holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

MAX_FILES = 100  # files kept per commit: more is a rewrite, read by Delta's reader
GLOB = frozenset("*?[]{}\\")  # Spark's file reader expands these in a path
NO_CHANGE = ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")

Kind = Literal["cdc", "insert", "delete"]


@dataclass(frozen=True)
class ChangeFile:
    kind: Kind  # a cdc file's rows carry their own _change_type
    path: str  # as the action has it: a URI, relative to the table's root or absolute
    partition_values: tuple[tuple[str, str | None], ...]
    size: int  # bytes


@dataclass(frozen=True)
class CommitFiles:
    files: tuple[ChangeFile, ...]
    in_commit_timestamp: int | None  # ms; None: the commit file's time is the commit's


def commit_files(actions: list[dict[str, Any]]) -> CommitFiles | None:
    """The files the commit's changes come from; None when Delta's reader must read it."""
    info = next((a["commitInfo"] for a in actions if "commitInfo" in a), None) or {}
    ict = info.get("inCommitTimestamp")
    stamp = int(ict) if isinstance(ict, int) else None
    cdc = [a["cdc"] for a in actions if "cdc" in a]
    if cdc:
        files = _files("cdc", cdc)
    elif _no_op_merge(info):
        files = ()
    else:
        adds = [a["add"] for a in actions if "add" in a and a["add"].get("dataChange")]
        removes = [a["remove"] for a in actions if "remove" in a and a["remove"].get("dataChange")]
        paths = [f.get("path") for f in adds + removes]
        if len(set(paths)) != len(paths) or not all(_plain(f) for f in adds + removes):
            return None  # paired, twice, or with a deletion vector: Delta pairs them
        if not all(r.get("extendedFileMetadata") is True for r in removes):
            return None  # Delta refuses it with DELTA_REMOVE_FILE_CDC_MISSING_EXTENDED_METADATA
        inserts, deletes = _files("insert", adds), _files("delete", removes)
        files = None if inserts is None or deletes is None else inserts + deletes
    if files is None or len(files) > MAX_FILES:
        return None
    return CommitFiles(files, stamp)


def _files(kind: Kind, actions: list[dict[str, Any]]) -> tuple[ChangeFile, ...] | None:
    found = []
    for action in actions:
        path, values, size = action.get("path"), action.get("partitionValues"), action.get("size")
        if not isinstance(path, str) or not isinstance(values, dict) or GLOB & set(path):
            return None
        if not isinstance(size, int) or size < 0:
            return None  # the scan finds a file's footer by its size
        found.append(ChangeFile(kind, path, tuple(sorted(values.items())), size))
    return tuple(found)


def _plain(action: dict[str, Any]) -> bool:
    return action.get("deletionVector") is None


def _no_op_merge(info: dict[str, Any]) -> bool:
    metrics = info.get("operationMetrics") or {}
    return info.get("operation") == "MERGE" and all(metrics.get(m) == "0" for m in NO_CHANGE)
