"""How cdfbridge-verify stages a column the producer hashes: its raw value in a column of its
own, and the compared column MATERIALIZED as ClickHouse's SHA-256 hex of it."""

import pytest

from schemas.column_policy import ColumnPolicy
from verify.hashed import definition, hashed_columns

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in [
            ("id", "string"),
            ("email", "string"),
            ("phone", "long"),
            ("n", "integer"),
            ("b", "binary"),
        ]
    ],
}


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("id", "String", "`id` String"),
        (
            "email",
            "Nullable(String)",
            "`__cdfbridge_raw_email` Nullable(String), `email` Nullable(String) "
            "MATERIALIZED lower(hex(SHA256(`__cdfbridge_raw_email`)))",
        ),
        (
            "phone",
            "String",
            "`__cdfbridge_raw_phone` Int64, `phone` String "
            "MATERIALIZED lower(hex(SHA256(toString(`__cdfbridge_raw_phone`))))",
        ),
    ],
)
def test_a_hashed_column_is_materialized_from_its_raw_value(
    name: str, kind: str, expected: str
) -> None:
    assert definition(name, kind, {"email": False, "phone": True}) == expected


def test_integers_hash_their_text_and_a_column_clickhouse_holds_unhashed_is_a_problem() -> None:
    target = [("id", "String"), ("email", "String"), ("phone", "Nullable(String)"), ("n", "Int32")]
    policy = ColumnPolicy.of(hashed=["email", "phone", "n", "b"])

    hashed, problems = hashed_columns(policy, SCHEMA, target)

    assert hashed == {"email": False, "phone": True}  # b is not in ClickHouse: reported apart
    assert problems == [
        "column `n` is hashed by --hash-columns, but ClickHouse holds it as Int32: was the "
        "producer given the same --hash-columns?"
    ]
