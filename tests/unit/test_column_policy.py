"""One row per case: the Delta schema a policy turns into the published one, and what it refuses."""

from typing import Any

import pytest

from schemas.avro import value_schema
from schemas.column_policy import ColumnPolicy, ColumnPolicyError


def field(name: str, kind: Any, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": nullable, "metadata": {}}


def schema(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


ID = field("id", "long", nullable=False)
STRUCT = {"type": "struct", "fields": [field("a", "integer")]}

CASES: list[tuple[str, ColumnPolicy, dict[str, Any], dict[str, Any]]] = [
    ("no policy: unchanged", ColumnPolicy(), schema(ID, field("a", "string")), schema(ID, field("a", "string"))),
    ("excluded column gone", ColumnPolicy.of(exclude=["ssn"]), schema(ID, field("ssn", "string"), field("a", "date")), schema(ID, field("a", "date"))),
    ("excluded column of any type gone", ColumnPolicy.of(exclude=["s"]), schema(ID, field("s", STRUCT)), schema(ID)),
    ("hashed string stays nullable", ColumnPolicy.of(hashed=["email"]), schema(ID, field("email", "string")), schema(ID, field("email", "string"))),
    ("hashed binary becomes string", ColumnPolicy.of(hashed=["b"]), schema(ID, field("b", "binary")), schema(ID, field("b", "string"))),
    ("hashed long becomes string", ColumnPolicy.of(hashed=["phone"]), schema(ID, field("phone", "long")), schema(ID, field("phone", "string"))),
    ("hashed int becomes string", ColumnPolicy.of(hashed=["n"]), schema(ID, field("n", "integer")), schema(ID, field("n", "string"))),
    ("hashed short becomes string", ColumnPolicy.of(hashed=["n"]), schema(ID, field("n", "short")), schema(ID, field("n", "string"))),
    ("hashed byte becomes string", ColumnPolicy.of(hashed=["n"]), schema(ID, field("n", "byte")), schema(ID, field("n", "string"))),
    ("hashed not-null stays not null", ColumnPolicy.of(hashed=["p"]), schema(ID, field("p", "long", False)), schema(ID, field("p", "string", False))),
    ("both at once, order kept", ColumnPolicy.of(exclude=["x"], hashed=["e"]), schema(ID, field("e", "string"), field("x", "string"), field("z", "double")), schema(ID, field("e", "string"), field("z", "double"))),
    ("a name the version lacks is left alone", ColumnPolicy.of(exclude=["later"], hashed=["later2"]), schema(ID), schema(ID)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "delta", "published"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_policy_turns_the_delta_schema_into_the_published_one(
    policy: ColumnPolicy, delta: dict[str, Any], published: dict[str, Any]
) -> None:
    assert policy.published(delta) == published


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        ("double", "type double"),
        ("decimal(10,2)", "type decimal(10,2)"),
        ("timestamp", "type timestamp"),
        ("date", "type date"),
        ("boolean", "type boolean"),
        (STRUCT, "type struct"),
        ({"type": "array", "elementType": "string", "containsNull": True}, "type array"),
    ],
)
def test_hashing_a_type_without_one_text_form_is_refused_naming_column_type_and_fix(
    kind: Any, named: str
) -> None:
    policy = ColumnPolicy.of(hashed=["c"])
    delta = schema(ID, field("c", kind))
    for refuse in (lambda: policy.published(delta), lambda: policy.check(delta, "/t", 3)):
        with pytest.raises(ColumnPolicyError, match="column c has type") as raised:
            refuse()
        assert named in str(raised.value)
        assert "--exclude-columns" in str(raised.value)


@pytest.mark.parametrize(
    ("policy", "flag"),
    [
        (ColumnPolicy.of(exclude=["ssn"]), "--exclude-columns"),
        (ColumnPolicy.of(hashed=["ssn"]), "--hash-columns"),
    ],
)
def test_a_column_the_table_lacks_is_named_with_the_table_version_and_flag(
    policy: ColumnPolicy, flag: str
) -> None:
    with pytest.raises(ColumnPolicyError) as raised:
        policy.check(schema(ID, field("email", "string")), "/data/people", 7)

    message = str(raised.value)
    assert f"{flag} names ['ssn']" in message
    assert "/data/people does not have at version 7 (its columns: id, email)" in message


def test_a_policy_the_table_satisfies_passes_its_check() -> None:
    ColumnPolicy.of(["x"], ["e", "n"]).check(
        schema(ID, field("e", "string"), field("x", STRUCT), field("n", "long")), "/t", 0
    )


def test_the_value_schema_has_no_excluded_field_and_a_hashed_one_as_string() -> None:
    delta = schema(ID, field("ssn", "string"), field("phone", "long"), field("age", "integer"))

    value = value_schema(ColumnPolicy.of(["ssn"], ["phone"]).published(delta), "t", ["id"])

    fields = {f["name"]: f["type"] for f in value["fields"]}
    assert "ssn" not in fields
    assert fields["phone"] == ["null", "string"]
    assert fields["age"] == ["null", "int"]
