"""A table that starts again in the process that last published it is not fenced: its read
waits until it shows the process's own last commit (Kafka writes a commit's markers just
after the commit returns), so the restart never publishes that chunk twice."""

from producer.takeover import owner_ids, take_over
from schemas.progress import Part, Position


class Reads:
    """Stands in for the progress topic's reader, answering the given positions in turn."""

    def __init__(self, *positions: Position) -> None:
        self.data_topic = "orders"
        self.positions, self.calls = list(positions), 0

    def read(self) -> Position:
        self.calls += 1
        return self.positions.pop(0) if len(self.positions) > 1 else self.positions[0]


MINE = ["cdfbridge-lake-1", "cdfbridge-lake-1-backlog"]


def test_a_read_behind_the_process_own_last_commit_is_read_again() -> None:
    reads = Reads(
        Position(4, owner=MINE[0]), Position(4, owner=MINE[0]), Position(5, owner=MINE[0])
    )

    found = take_over(reads, MINE, {}, committed=Position(5))  # type: ignore[arg-type]

    assert found.version == 5 and reads.calls == 3


def test_a_version_published_in_parts_is_waited_for_by_its_part() -> None:
    part = Part(6, 6, slices=3, done=1)
    reads = Reads(Position(5, owner=MINE[0]), Position(5, owner=MINE[0], part=part))

    found = take_over(reads, MINE, {}, committed=Position(5, part=part))  # type: ignore[arg-type]

    assert found.part == part and reads.calls == 2


def test_a_table_first_started_in_this_process_is_read_once() -> None:
    reads = Reads(Position(4, owner=MINE[0]))

    assert take_over(reads, MINE, {}).version == 4  # type: ignore[arg-type]
    assert reads.calls == 1


def test_records_without_an_owner_were_written_by_the_table_own_transactional_id() -> None:
    assert owner_ids(Position(3), "orders") == ["cdfbridge-orders"]
    assert owner_ids(Position(3, owner="x"), "orders") == ["x", "x-backlog"]
