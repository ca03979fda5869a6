"""Delta column names → Avro field names: any Delta name, one valid Avro name, no collisions.

Avro names match `[A-Za-z_][A-Za-z0-9_]*`; Delta allows hyphens, non-ASCII letters, leading
digits and, with column mapping, spaces and punctuation. The mapping:

- A name that is already a valid Avro name is kept as it is, unless it starts with `_u_`.
- Any other name becomes `_u_` followed by the name with every character outside
  `[A-Za-z0-9]` written as `_<hex code point>_`.

| Delta name     | Avro name                  |
| -------------- | -------------------------- |
| `order_id`     | `order_id`                 |
| `order-id`     | `_u_order_2d_id`           |
| `größe`        | `_u_gr_f6__df_e`           |
| `2nd_value`    | `_u_2nd_5f_value`          |
| `amount (eur)` | `_u_amount_20__28_eur_29_` |

Kept names never start with `_u_` and escaped ones always do, and an escaped name decodes to
exactly one Delta name, so two columns never map to one field. The field keeps the Delta name
in its `delta.name` property whenever the two differ; ClickHouse columns carry the Delta name.
"""

from __future__ import annotations

import re
from typing import Any

ESCAPED = "_u_"
ORIGINAL = "delta.name"  # the Avro field property holding the Delta name
_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLAIN = re.compile(r"[A-Za-z0-9]")
_TOKEN = re.compile(r"[A-Za-z0-9]|_([0-9a-f]+)_")


def avro_name(name: str) -> str:
    """The Avro field name of a Delta column (or struct field) name."""
    if _VALID.match(name) and not name.startswith(ESCAPED):
        return name
    return ESCAPED + "".join(c if _PLAIN.fullmatch(c) else f"_{ord(c):x}_" for c in name)


def delta_name(field: dict[str, Any]) -> str:
    """The Delta name of an Avro field: its `delta.name` property, else its name."""
    name: str = field.get(ORIGINAL, field["name"])
    return name


def decode(name: str) -> str:
    """The Delta name an Avro field name was made from (the inverse of `avro_name`)."""
    if not name.startswith(ESCAPED):
        return name
    body, out, at = name[len(ESCAPED) :], [], 0
    while at < len(body):
        token = _TOKEN.match(body, at)
        if token is None:
            raise ValueError(f"{name!r} is not an escaped Avro name")
        out.append(chr(int(token[1], 16)) if token[1] else token[0])
        at = token.end()
    return "".join(out)


def renamed(delta_type: Any) -> Any:
    """A Delta (Spark JSON) type with every struct field renamed to its Avro name: cast to it,
    Spark writes fields in order, so to_avro finds each field under its Avro name."""
    if not isinstance(delta_type, dict):
        return delta_type
    kind = delta_type.get("type")
    if kind == "struct":
        fields = [
            {**f, "name": avro_name(f["name"]), "type": renamed(f["type"]), "metadata": {}}
            for f in delta_type["fields"]
        ]
        return {**delta_type, "fields": fields}
    if kind == "array":
        return {**delta_type, "elementType": renamed(delta_type["elementType"])}
    if kind == "map":
        return {**delta_type, "valueType": renamed(delta_type["valueType"])}
    return delta_type
