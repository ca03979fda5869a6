"""Whether one ClickHouse column type grows into another by `ALTER TABLE ... MODIFY COLUMN`
with nothing lost: a struct (Tuple) that gained nullable elements at its end, however deep
(inside Nullable, Array and Map values). ClickHouse converts the stored tuples, the new
elements reading as NULL.

Types are compared as ClickHouse writes them in system.columns and as schemas/clickhouse.py
makes them: `Tuple(name Type, ...)`, element names backquoted when they need it.
"""

from __future__ import annotations

import re

from schemas.clickhouse import split_type, tuple_element

WRAPPERS = ("Nullable", "Array", "LowCardinality")


def extends(new: str, old: str) -> bool:
    """new is old, or old with nullable tuple elements appended (see the module)."""
    if _plain(new) == _plain(old):
        return True
    new_head, new_args = split_type(new)
    old_head, old_args = split_type(old)
    if new_head != old_head or not new_args or not old_args:
        return False
    if new_head in WRAPPERS:
        return extends(new_args[0], old_args[0])
    if new_head == "Map":
        return _plain(new_args[0]) == _plain(old_args[0]) and extends(new_args[1], old_args[1])
    if new_head != "Tuple" or len(new_args) < len(old_args):
        return False
    kept = [tuple_element(arg) for arg in new_args[: len(old_args)]]
    old_elements = [tuple_element(arg) for arg in old_args]
    added = [tuple_element(arg)[1] for arg in new_args[len(old_args) :]]
    return all(
        n_name == o_name and extends(n_type, o_type)
        for (n_name, n_type), (o_name, o_type) in zip(kept, old_elements, strict=True)
    ) and all(kind.startswith(("Nullable(", "Array(", "Map(", "Tuple(")) for kind in added)


def _plain(kind: str) -> str:
    return re.sub(r"[\s`]", "", kind)
