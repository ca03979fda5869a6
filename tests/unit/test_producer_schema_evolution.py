"""Which value schema changes a topic may follow: additive only, judged on the Avro bytes."""

import pytest

from producer.encode.evolution import check_additive
from producer.encode.table_schemas import RangeSchemas
from producer.errors import SchemaChangeError


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
        (record(("id", "long"), ("b", ["null", "string"])), "changed type"),
        (record(("id", "long"), ("b", ["null", "int"]), ("c", "int")), "not nullable"),
    ],
)
def test_anything_but_an_added_nullable_column_needs_a_resync(
    new: dict[str, object], named: str
) -> None:
    with pytest.raises(SchemaChangeError, match=named):
        check_additive(record(("id", "long"), ("b", ["null", "int"])), new, "t", 3)


def struct(name: str, *fields: dict[str, object]) -> dict[str, object]:
    return {"type": "record", "name": name, "fields": list(fields)}


STREET: dict[str, object] = {"name": "street", "type": ["null", "string"], "default": None}
COUNTRY: dict[str, object] = {"name": "country", "type": ["null", "string"], "default": None}
REQUIRED: dict[str, object] = {"name": "country", "type": "string"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            ["null", struct("addr", STREET)],
            ["null", struct("addr", STREET, COUNTRY)],
            id="a nullable struct",
        ),
        pytest.param(
            {"type": "array", "items": struct("item", STREET)},
            {"type": "array", "items": struct("item", STREET, COUNTRY)},
            id="an array of structs",
        ),
        pytest.param(
            {"type": "map", "values": ["null", struct("v", STREET)]},
            {"type": "map", "values": ["null", struct("v", STREET, COUNTRY)]},
            id="a map's struct values",
        ),
        pytest.param(
            struct("o", {"name": "inner", "type": struct("i", STREET)}),
            struct("o", {"name": "inner", "type": struct("i", STREET, COUNTRY)}),
            id="a struct in a struct",
        ),
    ],
)
def test_a_nullable_field_added_at_the_end_of_a_nested_struct_is_followed(
    old: object, new: object
) -> None:
    check_additive(record(("id", "long"), ("c", old)), record(("id", "long"), ("c", new)), "t", 3)


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(["null", struct("addr", STREET, REQUIRED)], id="not nullable"),
        pytest.param(["null", struct("addr", COUNTRY, STREET)], id="not at the end"),
        pytest.param(["null", struct("addr", COUNTRY)], id="a field replaced"),
    ],
)
def test_other_nested_changes_need_a_resync(new: object) -> None:
    old = record(("id", "long"), ("c", ["null", struct("addr", STREET)]))

    with pytest.raises(SchemaChangeError, match=r"columns \['c'\] changed type"):
        check_additive(old, record(("id", "long"), ("c", new)), "t", 3)


DECIMAL_5_2 = {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}


@pytest.mark.parametrize(
    ("old", "new", "followed"),
    [
        ("int", "long", True),
        ({"type": "int", "connect.type": "int8"}, {"type": "int", "connect.type": "int16"}, True),
        ("float", "double", True),
        ("int", "double", True),
        (DECIMAL_5_2, {**DECIMAL_5_2, "precision": 8, "scale": 3}, True),
        ("long", "int", False),
        ("double", "float", False),
        (DECIMAL_5_2, {**DECIMAL_5_2, "precision": 5, "scale": 3}, False),
    ],
)
def test_a_type_delta_widened_is_followed_and_a_narrowing_needs_a_resync(
    old: object, new: object, followed: bool
) -> None:
    before = record(("id", "long"), ("c", ["null", old]))
    after = record(("id", "long"), ("c", ["null", new]))

    if followed:
        check_additive(before, after, "t", 3)
    else:
        with pytest.raises(SchemaChangeError, match="changed type"):
            check_additive(before, after, "t", 3)


@pytest.mark.parametrize(
    ("changes_at", "parts"),
    [
        ([], [(3, 40)]),
        ([4], [(3, 3), (4, 40)]),
        ([40], [(3, 39), (40, 40)]),
        ([10, 11, 30], [(3, 9), (10, 10), (11, 29), (30, 40)]),
    ],
)
def test_a_span_is_cut_where_its_schema_changes(
    changes_at: list[int], parts: list[tuple[int, int]]
) -> None:
    """Versions 3..40; the schema is the number of changes at or before each version."""
    looked_up: list[int] = []

    def schema_at(version: int) -> dict[str, object]:
        looked_up.append(version)
        return {"changes": sum(at <= version for at in changes_at)}

    ranges = RangeSchemas(schema_at, None, ["id"], False)  # type: ignore[arg-type]

    assert ranges.parts(3, 40) == parts
    assert len(looked_up) <= 2 + 2 * len(changes_at) * 6  # a bisection, not a scan


def test_a_start_whose_later_commits_change_nothing_looks_up_its_last_schema_alone() -> None:
    looked_up: list[int] = []

    def schema_at(version: int) -> dict[str, object]:
        looked_up.append(version)
        return {"columns": 1}

    ranges = RangeSchemas(schema_at, None, ["id"], False)  # type: ignore[arg-type]
    changed = {0}  # version 0 made the table; read back at the start
    ranges.settled = lambda first, last: not changed & set(range(first, last + 1))
    assert ranges.of_range(0, 3) == {"columns": 1}
    assert looked_up == [3]  # the head's, whose snapshot is loaded; not version 0's

    changed.add(2)  # a metaData action at version 2: both ends looked up
    looked_up.clear()
    other = RangeSchemas(schema_at, None, ["id"], False)  # type: ignore[arg-type]
    other.settled = ranges.settled
    assert other.of_range(0, 3) == {"columns": 1}
    assert looked_up == [3, 0]
