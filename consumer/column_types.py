"""Whether one ClickHouse column type grows into another by `ALTER TABLE ... MODIFY COLUMN`
with nothing lost: a struct (Tuple) that gained nullable elements at its end, however deep
(inside Nullable, Array and Map values). ClickHouse converts the stored tuples, the new
elements reading as NULL.

Types are compared as ClickHouse writes them in system.columns and as schemas/clickhouse.py
makes them: `Tuple(name Type, ...)`, element names backquoted when they need it.
"""

from __future__ import annotations

import re

WRAPPERS = ("Nullable", "Array", "LowCardinality")


def extends(new: str, old: str) -> bool:
    """new is old, or old with nullable tuple elements appended (see the module)."""
    if _plain(new) == _plain(old):
        return True
    new_head, new_args = _split(new)
    old_head, old_args = _split(old)
    if new_head != old_head or not new_args or not old_args:
        return False
    if new_head in WRAPPERS:
        return extends(new_args[0], old_args[0])
    if new_head == "Map":
        return _plain(new_args[0]) == _plain(old_args[0]) and extends(new_args[1], old_args[1])
    if new_head != "Tuple" or len(new_args) < len(old_args):
        return False
    kept = [_element(arg) for arg in new_args[: len(old_args)]]
    old_elements = [_element(arg) for arg in old_args]
    added = [_element(arg)[1] for arg in new_args[len(old_args) :]]
    return all(
        n_name == o_name and extends(n_type, o_type)
        for (n_name, n_type), (o_name, o_type) in zip(kept, old_elements, strict=True)
    ) and all(kind.startswith(("Nullable(", "Array(", "Map(", "Tuple(")) for kind in added)


def _plain(kind: str) -> str:
    return re.sub(r"[\s`]", "", kind)


def _split(kind: str) -> tuple[str, list[str]]:
    """`Head(a, b)` as ("Head", ["a", "b"]); arguments split at top-level commas."""
    kind = kind.strip()
    opened = kind.find("(")
    if opened < 0 or not kind.endswith(")"):
        return kind, []
    args, depth, quote, start = [], 0, "", opened + 1
    for i in range(opened + 1, len(kind) - 1):
        char = kind[i]
        if quote:
            quote = "" if char == quote and kind[i - 1] != "\\" else quote
        elif char in "`'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            args.append(kind[start:i].strip())
            start = i + 1
    args.append(kind[start : len(kind) - 1].strip())
    return kind[:opened], args


def _element(arg: str) -> tuple[str, str]:
    """A named tuple element `name Type` (the name maybe backquoted) as (name, Type)."""
    if arg.startswith("`"):
        end = 1
        while arg[end] != "`" or arg[end - 1] == "\\":
            end += 1
        return arg[1:end], arg[end + 1 :].strip()
    name, _, kind = arg.partition(" ")
    return name, kind.strip()
