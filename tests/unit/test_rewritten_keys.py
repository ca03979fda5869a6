"""The rewritten-key rule on a slice as the driver receives it: a preimage (encoded as a
delete) is kept only where no row of its key survives its commit, so a key that an UPDATE or
MERGE moved away is deleted, and an ordinary update publishes its postimage alone."""

from __future__ import annotations

import pyarrow as pa
import pytest

from producer.encode.encode import IS_DELETE, KEY, ORDER, PREIMAGE, VALUE
from producer.encode.slices import rewritten_keys

# (key, commit version, change): the change as Delta's feed gives it.
Change = tuple[str, int, str]


def slice_of(changes: list[Change]) -> pa.Table:
    """The encoded columns for changes; keys framed as the wire format frames them."""
    kinds = [kind for _, _, kind in changes]
    return pa.table(
        {
            KEY: [b"\x00\x00\x00\x00\x01" + key.encode() for key, _, _ in changes],
            VALUE: [f"{key}@{v}:{kind}".encode() for key, v, kind in changes],
            ORDER: [v * 2 + (kind in ("insert", "update_postimage")) for _, v, kind in changes],
            IS_DELETE: [kind in ("delete", "update_preimage") for kind in kinds],
            PREIMAGE: [kind == "update_preimage" for kind in kinds],
        }
    )


def published(changes: list[Change]) -> list[str]:
    return sorted(v.decode() for v in rewritten_keys(slice_of(changes)).column(VALUE).to_pylist())


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            [("a", 3, "update_preimage"), ("a", 3, "update_postimage")],
            ["a@3:update_postimage"],
            id="an update that keeps its key publishes the postimage alone",
        ),
        pytest.param(
            [("a", 3, "update_preimage"), ("b", 3, "update_postimage")],
            ["a@3:update_preimage", "b@3:update_postimage"],
            id="a key moved a to b deletes a",
        ),
        pytest.param(
            [
                ("a", 3, "update_preimage"),
                ("b", 3, "update_preimage"),
                ("b", 3, "update_postimage"),
                ("a", 3, "update_postimage"),
            ],
            ["a@3:update_postimage", "b@3:update_postimage"],
            id="two keys swapped in one commit delete neither",
        ),
        pytest.param(
            [
                ("a", 3, "update_preimage"),
                ("b", 3, "update_postimage"),
                ("b", 4, "update_preimage"),
                ("c", 4, "update_postimage"),
            ],
            [
                "a@3:update_preimage",
                "b@3:update_postimage",
                "b@4:update_preimage",
                "c@4:update_postimage",
            ],
            id="a key moved twice in one chunk deletes each key it left, at its commit",
        ),
        pytest.param(
            [("a", 3, "update_preimage"), ("b", 3, "update_postimage"), ("a", 3, "insert")],
            ["a@3:insert", "b@3:update_postimage"],
            id="a moved key that a row of the same commit takes again survives",
        ),
        pytest.param(
            [("a", 3, "update_preimage"), ("a", 4, "update_postimage")],
            ["a@3:update_preimage", "a@4:update_postimage"],
            id="a survivor of another commit does not save a preimage",
        ),
        pytest.param(
            [("a", 3, "insert"), ("b", 3, "delete")],
            ["a@3:insert", "b@3:delete"],
            id="a slice without preimages is left alone",
        ),
    ],
)
def test_a_preimage_is_published_only_where_its_key_does_not_survive_the_commit(
    changes: list[Change], expected: list[str]
) -> None:
    assert published(changes) == expected


def test_versions_whose_digits_run_into_the_key_are_not_confused() -> None:
    # commit 1 key "2x" and commit 12 key "x" must not match as "12x"
    changes = [("2x", 1, "update_preimage"), ("x", 12, "update_postimage")]

    assert published(changes) == ["2x@1:update_preimage", "x@12:update_postimage"]
