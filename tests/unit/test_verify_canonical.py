"""The canonical form: only maps change, wherever they are nested."""

import pytest

from schemas.clickhouse import split_type
from verify.canonical import canonical, emptied, row_hash


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("Int64", "x"),
        ("Nullable(Decimal(18, 4))", "x"),
        ("DateTime64(6, 'UTC')", "x"),
        ("Array(Int64)", "x"),
        ("Tuple(a Nullable(Int32), b Nullable(String))", "x"),
        ("Map(String, Float64)", "mapSort(x)"),
        ("Array(Map(String, Int32))", "arrayMap(e0 -> mapSort(e0), x)"),
        (
            "Map(String, Map(String, Int32))",
            "mapSort(mapApply((k0, v0) -> (k0, mapSort(v0)), x))",
        ),
        (
            "Tuple(a Int32, m Map(String, Int32))",
            "tuple(tupleElement(x, 1), mapSort(tupleElement(x, 2)))",
        ),
        (
            "Tuple(`odd, name` Int32, `m` Map(String, Array(Int8)))",
            "tuple(tupleElement(x, 1), mapSort(tupleElement(x, 2)))",
        ),
        (
            "Nullable(Tuple(a Int32, m Map(String, Int32)))",
            "if(isNull(x), NULL, tuple(tupleElement(assumeNotNull(x), 1), "
            "mapSort(tupleElement(assumeNotNull(x), 2))))",
        ),
        ("Nullable(Tuple(a Int32))", "x"),
    ],
)
def test_canonical_sorts_every_map_and_leaves_other_types_alone(kind: str, expected: str) -> None:
    assert canonical("x", kind) == expected


def test_split_type_splits_only_top_level_arguments() -> None:
    assert split_type("Map(String, Tuple(a Int32, b DateTime64(6, 'UTC')))") == (
        "Map",
        ["String", "Tuple(a Int32, b DateTime64(6, 'UTC'))"],
    )
    assert split_type("String") == ("String", [])


def test_row_hash_covers_every_column_in_one_tuple() -> None:
    assert row_hash([("id", "String"), ("m", "Map(String, Int32)")]) == (
        "cityHash64(tuple(`id`, mapSort(`m`)))"
    )


def test_columns_holding_a_list_or_map_at_any_depth_are_named_as_normalised() -> None:
    columns = [
        ("id", "String"),
        ("tags", "Array(Nullable(String))"),
        ("attrs", "Map(String, Int64)"),
        ("address", "Nullable(Tuple(`city` Nullable(String), `lines` Array(String)))"),
        ("point", "Nullable(Tuple(`x` Float64, `y` Float64))"),
        ("`Array(` named", "Nullable(String)"),
    ]

    assert emptied(columns) == ["tags", "attrs", "address"]
