"""Whether one ClickHouse column type grows into another by `ALTER TABLE ... MODIFY COLUMN`
with nothing lost: a type Delta widened (a wider integer, Float64, a larger Decimal), or a
struct (Tuple) that gained nullable elements at its end, however deep (inside Nullable,
Array and Map values). ClickHouse converts the stored values, new tuple elements reading as
NULL.

Types are compared as ClickHouse writes them in system.columns and as schemas/clickhouse.py
makes them: `Tuple(name Type, ...)`, element names backquoted when they need it.
"""

from __future__ import annotations

import re

from schemas.clickhouse import split_type, tuple_element

WRAPPERS = ("Nullable", "Array", "LowCardinality")
INTEGERS = ("Int8", "Int16", "Int32", "Int64")
_DECIMAL = re.compile(r"Decimal\((\d+),(\d+)\)")


def extends(new: str, old: str) -> bool:
    """new is old, old widened, or old with nullable tuple elements appended (the module)."""
    if _plain(new) == _plain(old) or _widens(_plain(new), _plain(old)):
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


def _widens(new: str, old: str) -> bool:
    """Delta's type widenings as ClickHouse types: a wider integer, Float32 to Float64, an
    integer of 32 bits or less to Float64, a Decimal with more digits on either side."""
    if old in INTEGERS and new in INTEGERS:
        return INTEGERS.index(new) >= INTEGERS.index(old)
    if new == "Float64":
        return old == "Float32" or old in INTEGERS[:3]
    wider, narrower = _DECIMAL.fullmatch(new), _DECIMAL.fullmatch(old)
    if wider is None or narrower is None:
        return False
    precision, scale = map(int, wider.groups())
    old_precision, old_scale = map(int, narrower.groups())
    return scale >= old_scale and precision - scale >= old_precision - old_scale


def _plain(kind: str) -> str:
    return re.sub(r"[\s`]", "", kind)
