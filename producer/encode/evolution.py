"""Which changes of a topic's value schema a producer follows without a resync: nullable
fields added (at the top, or at the end of a struct, however deep) and Delta's type
widenings that Avro reads as promotions. Anything else needs a new generation."""

from __future__ import annotations

from typing import Any

from producer.errors import SchemaChangeError


def check_additive(old: dict[str, Any], new: dict[str, Any], table: str, version: int) -> None:
    """New may only add nullable fields to old, at the top or at the end of a struct (in an
    array or a map too), or widen a column's type; anything else needs a resync."""
    before = {f["name"]: f["type"] for f in old["fields"]}
    after = {f["name"]: f for f in new["fields"]}
    dropped = sorted(set(before) - set(after))
    if dropped:
        raise SchemaChangeError(table, version, f"columns {dropped} were dropped or renamed")
    retyped = sorted(n for n, kind in before.items() if not extends(after[n]["type"], kind))
    if retyped:
        raise SchemaChangeError(table, version, f"columns {retyped} changed type")
    required = sorted(n for n, f in after.items() if n not in before and "default" not in f)
    if required:
        raise SchemaChangeError(table, version, f"new columns {required} are not nullable")


# Delta's type widenings that Avro reads as promotions (byte and short are Avro ints too).
PROMOTIONS = frozenset({("int", "long"), ("int", "double"), ("float", "double")})


def extends(new: Any, old: Any) -> bool:
    """Whether Avro type new is old, old widened (PROMOTIONS, a decimal with more digits on
    either side of the point), or old with nullable fields (default null) appended to its
    records, however deep: in unions, array items and map values."""
    if bare(new) == bare(old) or _widens(bare(new), bare(old)):
        return True
    if isinstance(new, list) and isinstance(old, list):
        return len(new) == len(old) and all(map(extends, new, old))
    if not (isinstance(new, dict) and isinstance(old, dict)) or new["type"] != old["type"]:
        return False
    if new["type"] == "array":
        return extends(new["items"], old["items"])
    if new["type"] == "map":
        return extends(new["values"], old["values"])
    if new["type"] != "record" or len(new["fields"]) < len(old["fields"]):
        return False
    kept, added = new["fields"][: len(old["fields"])], new["fields"][len(old["fields"]) :]
    return all(
        n["name"] == o["name"] and extends(n["type"], o["type"])
        for n, o in zip(kept, old["fields"], strict=True)
    ) and all("default" in f for f in added)


def _widens(new: Any, old: Any) -> bool:
    if isinstance(new, str) and isinstance(old, str):
        return (old, new) in PROMOTIONS
    decimal = isinstance(new, dict) and isinstance(old, dict)
    if not decimal or new.get("logicalType") != "decimal" or old.get("logicalType") != "decimal":
        return False
    scale, old_scale = new.get("scale", 0), old.get("scale", 0)
    return bool(scale >= old_scale and new["precision"] - scale >= old["precision"] - old_scale)


# What an Avro schema says about the bytes; properties such as connect.type or delta.name
# (added by later releases) and defaults are left out.
_STRUCTURE = ("type", "items", "values", "logicalType", "precision", "scale", "size", "symbols")


def bare(schema: Any) -> Any:
    """An Avro schema as far as writers and readers of its bytes are concerned."""
    if isinstance(schema, list):
        return [bare(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: bare(schema[key]) for key in _STRUCTURE if key in schema}
    if "fields" in schema:
        out["fields"] = [(f["name"], bare(f["type"])) for f in schema["fields"]]
    return out["type"] if list(out) == ["type"] else out  # {"type": "int"} is "int"
