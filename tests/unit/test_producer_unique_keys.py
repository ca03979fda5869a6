"""A key that is not unique in the table is named: two rows of one key left by one commit
(or one snapshot) stop the table, with its key columns, the key and the version."""

from __future__ import annotations

import pyarrow as pa
import pytest

from producer.encode.encode import IS_DELETE, KEY, KEY_HASH, ORDER, Encoding, WireSchema
from producer.encode.slices import check_unique
from producer.errors import DuplicateKeyError

KEY_SCHEMA = {"type": "record", "name": "k", "fields": [{"name": "id", "type": "long"}]}
ENCODING = Encoding(WireSchema(KEY_SCHEMA, 7), WireSchema(KEY_SCHEMA, 8), ["id"], False)


def _key(value: int) -> bytes:
    from io import BytesIO

    import fastavro

    out = BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(KEY_SCHEMA), {"id": value})
    return ENCODING.key.prefix + out.getvalue()


def _rows(*changes: tuple[int, int, bool], hashes: list[int] | None = None) -> pa.Table:
    """(id, _order, is_delete) per row; the key hash is the id unless given."""
    return pa.table(
        {
            KEY: [_key(i) for i, _, _ in changes],
            ORDER: pa.array([o for _, o, _ in changes], pa.int64()),
            IS_DELETE: [d for _, _, d in changes],
            KEY_HASH: pa.array(hashes or [i for i, _, _ in changes], pa.int64()),
        }
    )


def test_two_rows_of_one_key_left_by_one_commit_name_the_key_and_version() -> None:
    rows = _rows((1, 7, False), (2, 7, False), (1, 7, False))
    with pytest.raises(DuplicateKeyError, match=r"\(id\) of table t .*version 3 .*key id=1"):
        check_unique(rows, "t", ENCODING)


@pytest.mark.parametrize(
    "changes",
    [
        [(1, 5, False), (1, 7, False)],  # the key in two commits
        [(1, 6, True), (1, 7, False)],  # deleted and inserted again in one commit
        [(1, 6, True), (1, 6, True)],  # deletes are not rows the commit leaves
        [],
    ],
    ids=["two commits", "delete and insert", "two deletes", "none"],
)
def test_changes_that_leave_one_row_per_key_pass(changes: list[tuple[int, int, bool]]) -> None:
    check_unique(_rows(*changes) if changes else _rows((1, 1, True)).slice(0, 0), "t", ENCODING)


def test_two_keys_whose_hashes_collide_are_told_apart_by_their_bytes() -> None:
    check_unique(_rows((1, 7, False), (2, 7, False), hashes=[9, 9]), "t", ENCODING)
