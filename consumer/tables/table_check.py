"""How an existing target table compares with the value schema and the settings, without a
server: the columns to ADD, those to MODIFY (Delta widened them, or their structs gained
fields), the differences that only a rebuild mends, and whether its partition key is the one
set. Types are compared as ClickHouse lists them in system.columns, spaces and backticks
aside; tables made by earlier releases compare as theirs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from consumer.tables.column_types import extends
from schemas.changes import GENERATION
from schemas.target import REBUILD_HINT, SchemaMismatchError, Target

Columns = Sequence[tuple[str, str]]  # (name, ClickHouse type)


def additions(target: Target, existing: dict[str, str], wanted: Columns) -> list[tuple[str, str]]:
    """Columns to ADD so the table holds `wanted`; raises SchemaMismatchError naming every
    column that differs in type, or is new and not nullable, or is gone and not nullable.
    `_generation` is the exception: the rows held take 0, which ranks them below every row of
    the generation that brings it (schemas/changes.py)."""
    retyped = [
        f"{name} is {existing[name]} in the table but {kind} in the schema"
        for name, kind in wanted
        if name in existing
        and _norm(existing[name]) != _norm(_older(kind))
        and not extends(kind, existing[name])  # widened, or a struct that gained fields: grown
        and not extends(existing[name], kind)  # an older schema's narrower one: read into it
    ]
    new = [(name, kind) for name, kind in wanted if name not in existing]
    required = [
        f"{name} {kind} is new and not nullable"
        for name, kind in new
        if not _null(kind) and name != GENERATION
    ]
    names = {name for name, _ in wanted}
    gone = [
        f"{name} {kind} is in the table, not in the schema, and not nullable"
        for name, kind in existing.items()
        if name not in names and not _null(kind)
    ]
    problems = retyped + required + gone
    if problems:
        raise SchemaMismatchError(
            f"table {target.name} does not match the value schema: {'; '.join(problems)}. "
            f"To replace the table with one of the new schema, {REBUILD_HINT}"
        )
    return new


def grown(existing: dict[str, str], wanted: Columns) -> list[tuple[str, str]]:
    """Columns Delta widened, or whose structs gained fields (consumer/tables/column_types.py), to
    MODIFY."""
    return [
        (name, kind)
        for name, kind in wanted
        if name in existing
        and _norm(existing[name]) != _norm(kind)
        and extends(kind, existing[name])
    ]


def _older(kind: str) -> str:
    """The type earlier releases made for the same Avro: Int32 for Int8 and Int16, Tuple for
    Nullable(Tuple). Tables made by them keep working; the insert converts."""
    kind = re.sub(r"(?<![`\w])Int(8|16)(?![`\w])", "Int32", kind)
    while (start := kind.find("Nullable(Tuple(")) >= 0:
        close = _closing(kind, start + len("Nullable("))
        kind = kind[:start] + kind[start + len("Nullable(") : close] + kind[close + 1 :]
    return kind


def _closing(kind: str, at: int) -> int:
    """Index of the parenthesis closing the one opened before `at`; skips quoted names."""
    depth, quoted, i = 1, False, at
    while depth:
        char = kind[i]
        if quoted:
            quoted, i = char != "`", i + (2 if char == "\\" else 1)
            continue
        quoted = char == "`"
        depth += {"(": 1, ")": -1}.get(char, 0)
        i += 1
    return i - 1


def same_partition(listed: str, written: str) -> bool:
    """Whether a partition key as ClickHouse lists it is the one written in the settings:
    spaces and backticks aside, `tuple()` being none."""
    return _partition(listed) == _partition(written)


def _partition(expression: str) -> str:
    found = _norm(expression)
    return "" if found == "tuple()" else found


def _norm(kind: str) -> str:
    return re.sub(r"[\s`]", "", kind)


def _null(kind: str) -> bool:
    # Array, Map and Tuple cannot be Nullable; a missing one reads as empty.
    return kind.startswith(("Nullable(", "Array(", "Map(", "Tuple("))
