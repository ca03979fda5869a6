"""Which columns of a table are published: some left out, some published hashed.

The policy turns a Delta schema (Spark's StructType JSON) into the schema that is
published: every schema the topic registers, and the ClickHouse table made from it,
follows from `ColumnPolicy.published`. Hashed values are the lowercase hex SHA-256 of

| Delta type                   | hashed bytes                                   |
| ---------------------------- | ---------------------------------------------- |
| string                       | its UTF-8 encoding                             |
| binary                       | the bytes themselves                           |
| byte, short, integer, long   | its decimal text (`-42`), as Spark's cast      |

so Spark's `sha2(col, 256)` in the producer and ClickHouse's `SHA256` in cdfbridge-verify
agree. NULL stays NULL. Other types are refused: their text forms differ between engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schemas.errors import TableConfigError

TableSchema = dict[str, Any]  # Spark's StructType as JSON
BYTES = frozenset({"string", "binary"})
INTEGRAL = frozenset({"byte", "short", "integer", "long"})
HASHABLE = BYTES | INTEGRAL
HASHED_TYPE = "string"  # what a hashed column is published as


class ColumnPolicyError(TableConfigError):
    """--exclude-columns or --hash-columns names a column the table cannot take it for."""


def hashes_text(delta_type: Any) -> bool:
    """True when a column of this type is hashed as its decimal text, not its own bytes."""
    return isinstance(delta_type, str) and delta_type in INTEGRAL


@dataclass(frozen=True)
class ColumnPolicy:
    """Columns never published, and columns published as the SHA-256 hex of their value."""

    exclude: frozenset[str] = frozenset()
    hashed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, exclude: Sequence[str] = (), hashed: Sequence[str] = ()) -> ColumnPolicy:
        return cls(frozenset(exclude), frozenset(hashed))

    def __bool__(self) -> bool:
        return bool(self.exclude or self.hashed)

    def published(self, table_schema: TableSchema) -> TableSchema:
        """table_schema as published: excluded columns gone, hashed ones `string` (as
        nullable as they were). A named column the schema lacks is left alone here (an older
        version may not have it yet); `check` refuses it."""
        fields = []
        for field in table_schema["fields"]:
            if field["name"] in self.exclude:
                continue
            if field["name"] in self.hashed:
                _hashable(field)
                field = {**field, "type": HASHED_TYPE}
            fields.append(field)
        return {**table_schema, "fields": fields}

    def check(self, table_schema: TableSchema, table: str, version: int) -> None:
        """ColumnPolicyError naming any column the policy names that the table lacks at
        version, or a hashed column of a type that cannot be hashed."""
        by_name = {field["name"]: field for field in table_schema["fields"]}
        for flag, named in (("--exclude-columns", self.exclude), ("--hash-columns", self.hashed)):
            missing = sorted(named - set(by_name))
            if missing:
                raise ColumnPolicyError(
                    f"{flag} names {missing}, which table {table} does not have at version "
                    f"{version} (its columns: {', '.join(by_name)}); fix {flag}"
                )
        for name in sorted(self.hashed):
            _hashable(by_name[name])


def _hashable(field: dict[str, Any]) -> None:
    kind = field["type"] if isinstance(field["type"], str) else field["type"].get("type")
    if kind not in HASHABLE:
        raise ColumnPolicyError(
            f"column {field['name']} has type {kind}, which cannot be hashed: --hash-columns "
            f"takes {', '.join(sorted(HASHABLE))} columns. Cast it to string in a view of the "
            "table, or leave it out with --exclude-columns"
        )
