"""Target-table DDL and schema checks, without a server."""

import pytest

from consumer.tables.table import add_columns_sql, create_table_sql, current_view_sql
from consumer.tables.table_check import additions, grown
from schemas.changes import IS_DELETED_SQL, version_sql
from schemas.target import SchemaMismatchError, Target
from services.table_marks import Mark, read_mark

TARGET = Target("db", "odd`name")


def test_create_table_is_a_replacing_merge_tree_on_the_derived_version() -> None:
    sql = create_table_sql(TARGET, [("id", "Int64"), ("my col", "String")], ["id"], 500)

    assert sql.startswith("CREATE TABLE IF NOT EXISTS `db`.`odd\\`name` (")
    assert "`my col` String" in sql
    assert f"`_version` UInt64 MATERIALIZED {version_sql(False)}" in sql
    assert f"`_is_deleted` UInt8 MATERIALIZED {IS_DELETED_SQL}" in sql
    assert "ENGINE = ReplacingMergeTree(`_version`, `_is_deleted`)" in sql
    assert "ORDER BY (`id`)" in sql
    assert sql.endswith("SETTINGS non_replicated_deduplication_window = 500")


def test_a_table_with_the_generation_column_ranks_generations_first() -> None:
    columns = [("id", "Int64"), ("_commit_version", "Int64"), ("_generation", "Int64")]
    sql = create_table_sql(TARGET, columns, ["id"], 500)

    assert f"`_version` UInt64 MATERIALIZED {version_sql(True)}" in sql
    assert version_sql(True).startswith("toUInt64(_generation) * 281474976710656 + ")


def test_current_view_reads_final_without_deleted_rows() -> None:
    assert current_view_sql(TARGET) == (
        "CREATE OR REPLACE VIEW `db`.`odd\\`name_current` AS "
        "SELECT * FROM `db`.`odd\\`name` FINAL WHERE `_is_deleted` = 0"
    )


def test_new_nullable_columns_are_added() -> None:
    existing = {"id": "Int64"}
    wanted = [("id", "Int64"), ("note", "Nullable(String)"), ("tags", "Array(String)")]

    new = additions(TARGET, existing, wanted)

    assert new == [("note", "Nullable(String)"), ("tags", "Array(String)")]
    assert add_columns_sql(TARGET, new) == (
        "ALTER TABLE `db`.`odd\\`name` ADD COLUMN IF NOT EXISTS `note` Nullable(String), "
        "ADD COLUMN IF NOT EXISTS `tags` Array(String)"
    )


def test_same_types_spelled_differently_match() -> None:
    existing = {"t": "Tuple(a Nullable(String), b Int32)"}

    assert additions(TARGET, existing, [("t", "Tuple(`a` Nullable(String), `b` Int32)")]) == []


@pytest.mark.parametrize(
    ("older", "wanted"),
    [
        ("Int32", "Int8"),
        ("Nullable(Int32)", "Nullable(Int16)"),
        ("Tuple(a Nullable(Int32))", "Nullable(Tuple(`a` Nullable(Int8)))"),
        ("Array(Tuple(`x)` String))", "Array(Nullable(Tuple(`x)` String)))"),
    ],
)
def test_tables_of_earlier_releases_keep_their_wider_types(older: str, wanted: str) -> None:
    assert additions(TARGET, {"c": older}, [("c", wanted)]) == []


@pytest.mark.parametrize(
    ("existing", "wanted", "named"),
    [
        ({"id": "Int64", "n": "String"}, [("id", "Int64"), ("n", "Int64")], "n is String in the"),
        ({"id": "Int64"}, [("id", "Int64"), ("n", "Int64")], "n Int64 is new and not nullable"),
        ({"id": "Int64", "n": "Int64"}, [("id", "Int64")], "n Int64 is in the table, not in"),
    ],
)
def test_incompatible_schema_is_refused_naming_the_column_and_the_rebuild_command(
    existing: dict[str, str], wanted: list[tuple[str, str]], named: str
) -> None:
    with pytest.raises(SchemaMismatchError, match=named) as raised:
        additions(TARGET, existing, wanted)

    assert "cdfbridge-consumer rebuild" in str(raised.value)


def test_partition_by_is_written_between_the_engine_and_the_order() -> None:
    sql = create_table_sql(TARGET, [("id", "Int64"), ("day", "Date")], ["id"], 500, "toYYYYMM(day)")

    assert (
        "ReplacingMergeTree(`_version`, `_is_deleted`)\nPARTITION BY toYYYYMM(day)\nORDER BY" in sql
    )
    assert "PARTITION BY" not in create_table_sql(TARGET, [("id", "Int64")], ["id"], 500)


@pytest.mark.parametrize(
    ("existing", "wanted"),
    [
        (
            "Nullable(Tuple(street Nullable(String)))",
            "Nullable(Tuple(`street` Nullable(String), `country` Nullable(String)))",
        ),
        (
            "Array(Tuple(k String, `v)` Nullable(Int32)))",
            "Array(Tuple(`k` String, `v)` Nullable(Int32), `w` Array(String)))",
        ),
        (
            "Map(String, Tuple(a Nullable(Decimal(10, 2))))",
            "Map(String, Tuple(`a` Nullable(Decimal(10, 2)), `b` Nullable(String)))",
        ),
        (
            "Tuple(inner Tuple(a Nullable(Int32)), z Nullable(String))",
            "Tuple(`inner` Tuple(`a` Nullable(Int32), `b` Nullable(Int64)), `z` Nullable(String))",
        ),
    ],
)
def test_a_struct_that_gained_nullable_fields_at_its_end_is_grown_in_place(
    existing: str, wanted: str
) -> None:
    assert additions(TARGET, {"c": existing}, [("c", wanted)]) == []
    assert grown({"c": existing}, [("c", wanted)]) == [("c", wanted)]


@pytest.mark.parametrize(
    "wanted",
    [
        "Nullable(Tuple(`country` Nullable(String), `street` Nullable(String)))",  # not at the end
        "Nullable(Tuple(`street` Nullable(String), `n` Int32))",  # not nullable
        "Nullable(Tuple(`road` Nullable(String)))",  # renamed
    ],
)
def test_other_struct_changes_are_refused(wanted: str) -> None:
    existing = {"c": "Nullable(Tuple(street Nullable(String)))"}

    with pytest.raises(SchemaMismatchError, match="c is Nullable"):
        additions(TARGET, existing, [("c", wanted)])
    assert grown(existing, [("c", wanted)]) == []


@pytest.mark.parametrize(
    ("existing", "wanted"),
    [
        ("Int8", "Int16"),
        ("Nullable(Int32)", "Nullable(Int64)"),
        ("Float32", "Float64"),
        ("Nullable(Int16)", "Nullable(Float64)"),
        ("Decimal(5, 2)", "Decimal(8, 3)"),
        ("Array(Nullable(Int32))", "Array(Nullable(Int64))"),
    ],
)
def test_a_type_delta_widened_is_widened_in_place(existing: str, wanted: str) -> None:
    assert additions(TARGET, {"c": existing}, [("c", wanted)]) == []
    assert grown({"c": existing}, [("c", wanted)]) == [("c", wanted)]


def test_an_older_schemas_narrower_type_is_read_into_the_wider_column() -> None:
    assert additions(TARGET, {"c": "Int64"}, [("c", "Int32")]) == []
    assert grown({"c": "Int64"}, [("c", "Int32")]) == []


def test_a_decimal_with_fewer_digits_before_the_point_is_refused() -> None:
    with pytest.raises(SchemaMismatchError, match="c is Decimal"):
        additions(TARGET, {"c": "Decimal(5, 2)"}, [("c", "Decimal(5, 3)")])


def test_the_generation_column_is_added_to_a_table_of_an_older_shape() -> None:
    wanted = [("id", "Int64"), ("_generation", "Int64")]

    assert additions(TARGET, {"id": "Int64"}, wanted) == [("_generation", "Int64")]
    with pytest.raises(SchemaMismatchError, match="other Int64 is new and not nullable"):
        additions(TARGET, {"id": "Int64"}, [*wanted, ("other", "Int64")])


def test_a_tables_mark_keeps_its_generation_start_and_engine_group() -> None:
    comment = (
        '{"cdfbridge_generation": 2, "cdfbridge_start": {"0": 5}, "cdfbridge_engine_group": "g-7"}'
    )
    assert read_mark(comment) == Mark(2, {0: 5}, "g-7")
    assert read_mark('{"cdfbridge_generation": 1}') == Mark(1)
    assert read_mark('{"cdfbridge_engine_group": 7}') == Mark()  # someone else's comment
    assert read_mark("a comment of the user's") == Mark()


def test_an_engine_group_recorded_for_another_group_is_not_read_on_with() -> None:
    from consumer.kafka_engine.evolve import recorded_group

    assert recorded_group(Mark(engine_group="g-7"), "g") == "g-7"
    assert recorded_group(Mark(engine_group="g-7"), "h") is None  # --group changed since
    assert recorded_group(Mark(), "g") is None
