"""Taking a table over (producer/publish/takeover.py), its decisions: whom to fence, when to claim,
when a read is to be read again. Kafka's side is tests/integration/test_shared_transactions.py."""

from producer.publish.takeover import ids_of, take_over
from schemas.progress import Part, Position
from services.progress_topic import Owners

MINE = ["cdfbridge-lake-1", "cdfbridge-lake-1-backlog"]


class Reads:
    """Stands in for the progress topic's reader: answers the given positions in turn (the
    last one again and again), each written by this process and claimed by it."""

    def __init__(self, *positions: Position) -> None:
        self.data_topic, self.topic = "orders", "orders.progress"
        self.positions, self.calls = list(positions), 0

    def read_owners(self, since: int) -> tuple[Position, Owners]:
        self.calls += 1
        position = self.positions.pop(0) if len(self.positions) > 1 else self.positions[0]
        return position, Owners(since, since + 1, True, MINE[0], {MINE[0]})


def claims(reads: Reads, committed: Position | None = None) -> tuple[Position, list[int]]:
    made: list[int] = []
    found = take_over(reads, MINE, {}, lambda: made.append(1), committed)  # type: ignore[arg-type]
    return found, made


def test_a_read_behind_the_process_own_last_commit_is_read_again() -> None:
    reads = Reads(
        Position(4, owner=MINE[0]), Position(4, owner=MINE[0]), Position(5, owner=MINE[0])
    )

    found, made = claims(reads, committed=Position(5))

    assert found.version == 5 and made == [1]
    assert reads.calls == 4  # three until the commit shows, one until the claim shows


def test_a_version_published_in_parts_is_waited_for_by_its_part() -> None:
    part = Part(6, 6, slices=3, done=1)
    reads = Reads(Position(5, owner=MINE[0]), Position(5, owner=MINE[0], part=part))

    found, _ = claims(reads, committed=Position(5, part=part))

    assert found.part == part and reads.calls == 3


def test_a_table_first_started_in_this_process_is_read_once_then_claimed() -> None:
    reads = Reads(Position(4, owner=MINE[0]))

    found, made = claims(reads)

    assert found.version == 4 and made == [1] and reads.calls == 2


def test_records_without_an_owner_were_written_by_the_table_own_transactional_id() -> None:
    assert ids_of(None, "orders") == ["cdfbridge-orders"]
    assert ids_of("x", "orders") == ["x", "x-backlog"]
