"""The canonical form: only maps change, wherever they are nested."""

import pytest

from verify.canonical import canonical, row_hash, split_type


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
