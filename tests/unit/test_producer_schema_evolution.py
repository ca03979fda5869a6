"""Which value schema changes a topic may follow: additive only, judged on the Avro bytes."""

import pytest

from producer.errors import SchemaChangeError
from producer.registry import check_additive


def record(*fields: tuple[str, object]) -> dict[str, object]:
    return {"type": "record", "name": "v", "fields": [{"name": n, "type": t} for n, t in fields]}


def test_properties_a_later_release_adds_are_not_a_change() -> None:
    """Topics registered before byte/short carried connect.type keep being followed."""
    old = record(
        ("id", "long"),
        ("b", ["null", "int"]),
        ("s", {"type": "record", "name": "r", "fields": [{"name": "x", "type": "int"}]}),
    )
    new = record(
        ("id", "long"),
        ("b", ["null", {"type": "int", "connect.type": "int8"}]),
        (
            "s",
            {
                "type": "record",
                "name": "r",
                "fields": [{"name": "x", "type": {"type": "int", "connect.type": "int16"}}],
            },
        ),
    )

    check_additive(old, new, "t", 3)


@pytest.mark.parametrize(
    ("new", "named"),
    [
        (record(("id", "long")), "dropped or renamed"),
        (record(("id", "long"), ("b", ["null", "long"])), "changed type"),
        (record(("id", "long"), ("b", ["null", "int"]), ("c", "int")), "not nullable"),
    ],
)
def test_anything_but_an_added_nullable_column_needs_a_resync(
    new: dict[str, object], named: str
) -> None:
    with pytest.raises(SchemaChangeError, match=named):
        check_additive(record(("id", "long"), ("b", ["null", "int"])), new, "t", 3)
