"""What each row of a file read (producer/read/file_read.py) is given: its file's commit
version, commit time and change kind, and the table's partition values, picked by the
file's place among the scan's files (TAG)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from schemas import changes

_INTEGRAL = {"byte": 7, "short": 15, "integer": 31, "long": 63}  # bits besides the sign
PARTITION_TYPES = (*_INTEGRAL, "string", "boolean", "date")  # partition values read so
_NUMBER = re.compile(r"-?[0-9]{1,19}")
TAG = "_file_read_tag"  # each row's file, by its place among the scan's files


@dataclass(frozen=True)
class Tag:
    """What every row of one file is given: its commit's and its action's."""

    path: str
    size: int  # bytes
    version: int
    kind: str
    stamp: int  # the commit's time, ms
    literals: dict[str, str]  # partition column: its value as a SQL literal


def tag_of(tags: dict[str, Tag]) -> str:
    """The column of each row's file's place in tags, by the file's name: looked up even for
    one file, so that no value picked by it (pick) is a constant Spark folds."""
    pairs = ", ".join(f"'{name}', {i}" for i, name in enumerate(tags))
    return f"element_at(map({pairs}), _metadata.file_name) AS {TAG}"


def partition_literals(
    partitions: dict[str, str], values: dict[str, str | None]
) -> dict[str, str] | None:
    """Each partition column's value as a SQL literal of its type: its text as UTF-8 bytes
    (no quoting to get wrong), cast to the type."""
    literals = {}
    for name, type_name in partitions.items():
        value = values.get(name)
        if value is None:
            literals[name] = f"CAST(NULL AS {type_name})"
        elif _casts_alike(type_name, value):
            text = f"CAST(X'{value.encode().hex()}' AS STRING)"
            literals[name] = text if type_name == "string" else f"CAST({text} AS {type_name})"
        else:
            return None
    return literals


def _casts_alike(type_name: str, value: str) -> bool:
    """Whether Spark casts value to type_name alike with and without ANSI (Delta casts
    partition values without)."""
    if type_name == "string":
        return True
    if type_name == "boolean":
        return value in ("true", "false")
    if type_name == "date":
        try:
            date.fromisoformat(value)  # a real day ...
        except ValueError:
            return False
        return bool(re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value))  # ... written in full
    bits = _INTEGRAL[type_name]
    return bool(_NUMBER.fullmatch(value)) and -(2**bits) <= int(value) < 2**bits


def pick(values: list[str]) -> str:
    """The value (a SQL expression) of each row's file, values given per file in the scan's
    order, looked up by the row's TAG even where every file's is alike. Spark writes a
    number, date or time it folds to a constant into the code it generates for the job, so
    each cycle's new versions and times would make it compile new code every cycle (two
    classes, and the JIT's work on them); an array of constants reaches the code as an
    object, and the code stays the same (tests/integration/test_shared_scan.py)."""
    return f"element_at(array({', '.join(values)}), {TAG} + 1)"


def exprs(columns: tuple[str, ...], tags: list[Tag]) -> list[str]:
    """The table's columns and the change columns, each file's constants picked by its
    place in tags (TAG)."""

    kind, cdc = pick([f"'{t.kind}'" for t in tags]), _quoted(changes.CHANGE_TYPE)
    kinds = {t.kind for t in tags}
    change_type = kind if "cdc" not in kinds else cdc  # a cdc file's rows carry their own
    if "cdc" in kinds and len(kinds) > 1:
        change_type = f"CASE WHEN {kind} = 'cdc' THEN {cdc} ELSE {kind} END"
    values = [
        f"{pick([t.literals[c] for t in tags])} AS {_quoted(c)}"
        if c in tags[0].literals
        else _quoted(c)
        for c in columns
    ]
    version = pick([f"CAST({int(t.version)} AS BIGINT)" for t in tags])
    stamp = pick([f"CAST({int(t.stamp)} AS BIGINT)" for t in tags])
    return [
        *values,
        f"{change_type} AS {cdc}",
        f"{version} AS {_quoted(changes.COMMIT_VERSION)}",
        f"timestamp_millis({stamp}) AS {_quoted(changes.COMMIT_TIMESTAMP)}",
    ]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
