"""What the commit log makes of a table's commit files: rows, and whether a run of commits
can be read with the schema already known."""

import json

from producer.follow.commits import KEPT, Commit, Commits, parsed
from producer.follow.idle import Idle


def commit_file(*actions: dict[str, object]) -> str:
    return "\n".join(json.dumps(action) for action in actions) + "\n"


def test_a_commit_counts_its_change_rows_from_its_operation_metrics() -> None:
    text = commit_file(
        {
            "commitInfo": {
                "operation": "MERGE",
                "operationMetrics": {
                    "numTargetRowsInserted": "3",
                    "numTargetRowsUpdated": "2",
                    "numTargetRowsDeleted": "1",
                },
            }
        },
        {"add": {"path": "part-0.parquet", "dataChange": True}},
    )
    assert parsed(7, text) == Commit(7, rows=3 + 2 * 2 + 1, changes_table=False)


def test_a_commit_without_metrics_has_no_estimate() -> None:
    assert parsed(1, commit_file({"add": {"path": "p"}})).rows is None


def test_metadata_or_protocol_marks_a_commit_that_may_change_the_table() -> None:
    meta = commit_file({"metaData": {"id": "x", "schemaString": "{}"}}, {"commitInfo": {}})
    protocol = commit_file({"protocol": {"minReaderVersion": 3}})
    assert parsed(2, meta).changes_table
    assert parsed(3, protocol).changes_table


def test_a_metadata_action_names_the_table_it_belongs_to() -> None:
    meta = commit_file({"protocol": {"minReaderVersion": 1}}, {"metaData": {"id": "abc"}})
    assert parsed(0, meta).table_id == "abc"
    assert parsed(1, commit_file({"add": {"path": "p"}})).table_id is None


def test_a_run_is_settled_only_when_every_commit_was_read_and_none_changes_the_table() -> None:
    commits = Commits()
    for version in (4, 5, 7):
        commits.add(Commit(version, 10, changes_table=False))
    commits.add(Commit(8, 10, changes_table=True))
    assert commits.settled(4, 5)
    assert not commits.settled(4, 7)  # 6 was never read
    assert not commits.settled(7, 8)  # 8 carries metaData
    assert commits.settled(6, 5)  # an empty run


def test_a_snapshot_holds_for_a_range_when_no_commit_between_or_after_its_first_changes() -> None:
    commits = Commits()
    for version in (3, 4, 5, 7):
        commits.add(Commit(version, 1, changes_table=version == 7))

    assert commits.holds(5, 5, 5)  # its own version: nothing to read
    assert commits.holds(2, 3, 5)  # 3..5 read, none changing
    assert commits.holds(5, 3, 4)  # an older range: 4..5 read, none changing
    assert not commits.holds(5, 5, 7)  # 6 not read, 7 changes the table
    assert not commits.holds(1, 3, 5)  # 2 not read


def test_estimates_cover_a_span_only_when_every_commit_was_read() -> None:
    commits = Commits()
    commits.add(Commit(1, 10, False))
    commits.add(Commit(2, None, False))
    assert commits.estimates(1, 2) == {1: 10, 2: None}
    assert commits.estimates(1, 3) is None


def test_old_commits_are_forgotten() -> None:
    commits = Commits()
    commits.add(Commit(0, 1, False))
    commits.add(Commit(KEPT + 1, 1, False))
    assert 0 not in commits and KEPT + 1 in commits


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_idle_table_loads_its_whole_log_at_first_then_once_a_minute_of_empty_polls() -> None:
    clock = Clock()
    idle = Idle(poll_interval_s=1.0, max_s=20.0, clock=clock)

    def polls(found: bool, every_s: float, count: int) -> list[bool]:
        checked = []
        for _ in range(count):
            checked.append(idle.check_log(found))
            clock.now += every_s
        return checked

    assert polls(False, 20.0, 4) == [True, False, False, True]  # at 0 s and 60 s
    assert polls(True, 20.0, 1) == [False]  # a commit found starts the minute over
    assert polls(False, 20.0, 3) == [False, False, True]


def test_an_idle_tables_polls_grow_apart_up_to_the_bound_and_a_commit_sets_them_back() -> None:
    idle = Idle(poll_interval_s=0.5, max_s=5.0, clock=Clock())

    assert [idle.next_wait_s() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    idle.check_log(found=True)
    assert [idle.next_wait_s() for _ in range(2)] == [0.5, 1.0]


def test_a_bound_below_the_poll_interval_polls_at_one_pace() -> None:
    idle = Idle(poll_interval_s=2.0, max_s=1.0, clock=Clock())

    assert [idle.next_wait_s() for _ in range(3)] == [2.0, 2.0, 2.0]


def test_an_idle_table_must_wake_for_its_next_whole_log_load_whatever_the_looks_find() -> None:
    clock = Clock()
    idle = Idle(poll_interval_s=1.0, max_s=5.0, clock=clock)
    assert idle.wake_by() == 0.0  # never loaded: at once

    clock.now = 10.0
    idle.check_log(found=True)  # a commit found: the minute starts over
    clock.now = 30.0
    assert idle.wake_by() == 70.0
