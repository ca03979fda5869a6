"""Which files a commit's changes come from (producer/follow/commit_files.py, Delta's rule), and
what the file read (producer/read/file_read.py) turns a path and a partition value into. The
rows themselves are compared with Delta's reader in tests/integration/test_file_read.py."""

from __future__ import annotations

from typing import Any

from producer.follow.commit_files import MAX_FILES, ChangeFile, commit_files
from producer.follow.commits import FILES_KEPT, Commit, Commits
from producer.read.file_read import _absolute
from producer.read.file_tags import TAG, Tag, _casts_alike, exprs, partition_literals, tag_of


def add(path: str, **fields: Any) -> dict[str, Any]:
    found = {"path": path, "partitionValues": {"p": "1"}, "dataChange": True, "size": 10}
    return {"add": {**found, **fields}}


def remove(path: str, **fields: Any) -> dict[str, Any]:
    found = {"path": path, "partitionValues": {}, "dataChange": True, "size": 1, **fields}
    return {"remove": {"extendedFileMetadata": True, **found}}


def cdc(path: str) -> dict[str, Any]:
    return {"cdc": {"path": path, "partitionValues": {"p": None}, "dataChange": False, "size": 7}}


def merge(**metrics: str) -> dict[str, Any]:
    return {"commitInfo": {"operation": "MERGE", "operationMetrics": metrics}}


def test_a_commit_with_cdc_files_reads_them_alone() -> None:
    found = commit_files([add("a"), remove("b"), cdc("_change_data/c")])
    assert found is not None
    assert found.files == (ChangeFile("cdc", "_change_data/c", (("p", None),), 7),)


def test_otherwise_adds_are_inserts_and_removes_deletes_when_they_change_data() -> None:
    actions = [add("a"), add("x", dataChange=False), remove("b"), remove("y", dataChange=False)]
    found = commit_files(actions)
    assert found is not None
    assert [(f.kind, f.path) for f in found.files] == [("insert", "a"), ("delete", "b")]


def test_a_merge_that_says_it_changed_nothing_gives_nothing() -> None:
    zero = {"numTargetRowsInserted": "0", "numTargetRowsUpdated": "0", "numTargetRowsDeleted": "0"}
    found = commit_files([merge(**zero), add("a"), remove("b")])
    assert found is not None and found.files == ()
    one_missing = {k: v for k, v in zero.items() if k != "numTargetRowsDeleted"}
    assert commit_files([merge(**one_missing), add("a")]).files  # type: ignore[union-attr]


def test_what_delta_pairs_or_refuses_is_left_to_its_reader() -> None:
    vector = {"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1}
    assert commit_files([add("a", deletionVector=vector)]) is None
    assert commit_files([remove("a", deletionVector=vector)]) is None
    assert commit_files([remove("a"), add("a")]) is None  # a file's vector changed
    assert commit_files([add("a"), add("a")]) is None
    assert commit_files([remove("a", extendedFileMetadata=False)]) is None
    assert commit_files([add("a[1]")]) is None  # Spark would read it as a pattern
    assert commit_files([add("a", size=None)]) is None  # the scan finds a footer by its size
    assert commit_files([add("a", size=-1)]) is None
    assert commit_files([add(f"f{i}") for i in range(MAX_FILES + 1)]) is None


def test_an_in_commit_timestamp_is_the_commits_time() -> None:
    found = commit_files([{"commitInfo": {"inCommitTimestamp": 1700000000123}}, add("a")])
    assert found is not None and found.in_commit_timestamp == 1700000000123
    assert commit_files([add("a")]).in_commit_timestamp is None  # type: ignore[union-attr]


def test_files_are_kept_for_the_newest_commits_only() -> None:
    commits = Commits()
    files = commit_files([add("a")])
    for version in range(FILES_KEPT + 2):
        commits.add(Commit(version, 1, False, None, files))
    assert commits.files(FILES_KEPT + 1, FILES_KEPT + 1) == [(FILES_KEPT + 1, files)]
    assert commits.files(0, 1) is None
    assert commits.files(FILES_KEPT + 1, FILES_KEPT + 2) is None  # not read yet
    assert 0 in commits and 2 in commits  # still known, only their files let go

    commits.forget_dropped(0, 0)  # a read of version 0: it is read again
    assert 0 not in commits and 1 in commits and commits.files(2, 2) == [(2, files)]
    commits.add(Commit(0, 1, False, None, files))
    assert commits.files(0, 0) == [(0, files)]
    commits.forget_dropped(0, 1)
    assert 0 in commits and 1 not in commits


def test_a_path_is_resolved_as_delta_resolves_it() -> None:
    root = "file:/lake/t"
    assert _absolute(root, "p=x%20y/part-0.parquet") == "file:/lake/t/p=x y/part-0.parquet"
    assert _absolute(root, "p=a%253Ab/f.parquet") == "file:/lake/t/p=a%3Ab/f.parquet"
    assert _absolute(root, "s3a://bucket/t/f%20g.parquet") == "s3a://bucket/t/f g.parquet"
    assert _absolute(root, "p=%5B1%5D/f.parquet") is None  # a pattern once decoded
    assert _absolute(root, "a%3Ab/f.parquet") is None  # a colon Spark would take for a scheme


def test_partition_values_become_literals_only_where_every_cast_agrees() -> None:
    assert _casts_alike("integer", "-2147483648") and not _casts_alike("integer", "2147483648")
    assert not _casts_alike("long", "1.5") and not _casts_alike("long", "")
    assert _casts_alike("date", "2024-02-29") and not _casts_alike("date", "2023-02-29")
    assert _casts_alike("boolean", "true") and not _casts_alike("boolean", "yes")
    partitions = {"p": "string", "q": "integer"}
    assert partition_literals(partitions, {"p": "it's", "q": None}) == {
        "p": "CAST(X'69742773' AS STRING)",
        "q": "CAST(NULL AS integer)",
    }
    assert partition_literals(partitions, {"p": "a", "q": "x"}) is None


def test_every_files_constants_are_picked_by_its_tag_even_where_alike() -> None:
    p = {"p": "CAST(X'61' AS STRING)"}
    one = Tag("f/a.parquet", 10, 3, "insert", 1000, p)
    by_tag = f"{TAG} + 1)"
    assert tag_of({"a.parquet": one}) == (
        f"element_at(map('a.parquet', 0), _metadata.file_name) AS {TAG}"  # not a constant
    )
    assert exprs(("id", "p"), [one]) == [
        "`id`",
        f"element_at(array({p['p']}), {by_tag} AS `p`",
        f"element_at(array('insert'), {by_tag} AS `_change_type`",
        f"element_at(array(CAST(3 AS BIGINT)), {by_tag} AS `_commit_version`",
        f"timestamp_millis(element_at(array(CAST(1000 AS BIGINT)), {by_tag}) AS `_commit_timestamp`",
    ]
    cdc = Tag("f/b.parquet", 10, 4, "cdc", 2000, p)
    both = exprs(("id", "p"), [one, cdc])
    assert both[1] == f"element_at(array({p['p']}, {p['p']}), {by_tag} AS `p`"
    kind = f"element_at(array('insert', 'cdc'), {by_tag}"
    assert (
        both[2] == f"CASE WHEN {kind} = 'cdc' THEN `_change_type` ELSE {kind} END AS `_change_type`"
    )
    assert (
        both[3]
        == f"element_at(array(CAST(3 AS BIGINT), CAST(4 AS BIGINT)), {by_tag} AS `_commit_version`"
    )
