"""A table's write unit: the batches of several partitions of a topic in one insert, recorded
in each partition's commit metadata first, and written again the same way (same ranges, same
token) whoever reads one of those partitions again: a rewind, a restart, the next owner of a
partition, or a member that lost one of them meanwhile. The writer and the offset commit are
in-process stand-ins (tests/unit/test_consumer_uncommitted.py)."""

import threading

from confluent_kafka import TopicPartition

from consumer.group.batch import PartitionBatch
from consumer.group.units import INTENT, UNIT, Unit, recorded
from tests.unit.test_consumer_uncommitted import (
    P0,
    P1,
    Services,
    messages,
    owner_of,
    poll_until_idle,
)

BOTH = "t-0:0-2+1:0-2"  # the token of partitions 0 and 1, offsets 0 to 2 each
RECORDED = f"{UNIT}0:0-2,1:0-2"


class Units(Services):
    """Also keeps each unit written: which ranges it read again from Kafka."""

    def __init__(self) -> None:
        super().__init__()
        self.read_again: list[list[tuple[int, int, int]]] = []

    def write(self, unit: Unit) -> list:  # type: ignore[type-arg]
        written = super().write(unit)
        self.read_again.append(unit.missing)
        return written


def test_the_metadata_of_a_unit_names_every_range_and_each_partition_finds_its_end() -> None:
    batches = [PartitionBatch("t", p, 10 * p, 10 * p + 4, [b"v"] * 5) for p in (1, 0)]
    unit = Unit.of(batches)

    meta = unit.intent(batches[0])
    found = recorded(TopicPartition("t", 1, 10, metadata=meta))

    assert unit.token == "t-0:0-4+1:10-14"
    assert meta == f"{UNIT}0:0-4,1:10-14"
    assert found is not None and (found.end, found.ranges) == (14, ((0, 0, 4), (1, 10, 14)))
    alone = recorded(TopicPartition("t", 0, 7, metadata=f"{INTENT}9"))
    assert alone is not None and (alone.end, alone.ranges) == (9, ((0, 7, 9),))
    assert recorded(TopicPartition("t", 0, -1001, metadata=meta)) is None


def test_batches_cut_together_make_one_insert_then_one_commit_per_partition() -> None:
    services = Units()
    owner = owner_of(services)

    owner.submit(messages(0, range(3)) + messages(1, range(3)))  # full batches of 3
    poll_until_idle(owner)

    assert services.inserts() == [BOTH]
    assert services.commits() == [
        [(0, 0, RECORDED), (1, 0, RECORDED)],
        [(0, 3, None), (1, 3, None)],
    ]


def test_a_failed_unit_is_written_again_whole_with_its_token_after_the_rewind() -> None:
    services = Units()
    owner = owner_of(services)
    services.refused_once = {BOTH}
    owner.submit(messages(0, range(3)) + messages(1, range(3)))

    outcome = poll_until_idle(owner)
    assert outcome.failed is not None
    # Read again from the recorded offsets; partition 1 comes back first this time.
    owner.submit(messages(1, range(5)))
    owner.submit(messages(0, range(5)))
    poll_until_idle(owner)

    assert services.inserts() == [BOTH]
    assert services.commits()[-1] == [(0, 3, None), (1, 3, None)]


def test_a_member_holding_one_partition_of_a_recorded_unit_reads_the_other_again() -> None:
    services = Units()
    owner = owner_of(services)
    owner.lose({P1})  # partition 1 went to another member
    owner.assign([TopicPartition("t", 0, 0, metadata=RECORDED)])  # a restart, say

    owner.submit(messages(0, range(8)))
    poll_until_idle(owner)

    assert services.inserts()[0] == BOTH  # ClickHouse drops it if it was written before
    assert services.read_again[0] == [(1, 0, 2)]
    # Only its own partition is committed; the rest of partition 0 follows in its own units.
    assert [tp for commit in services.commits() for tp in commit if tp[0] == 1] == []
    assert services.commits()[1] == [(0, 3, f"{INTENT}5")]  # step 3 with the next step 1


def test_losing_one_partition_of_a_unit_in_flight_commits_the_other_once_written() -> None:
    services = Units()
    owner = owner_of(services)
    services.inserting.clear()
    owner.submit(messages(0, range(3)) + messages(1, range(3)))
    owner.poll(wait=False)  # the unit of both is in flight

    losing = threading.Thread(target=owner.lose, args=({P1},))
    losing.start()
    services.inserting.set()
    losing.join(10)
    poll_until_idle(owner)

    assert services.inserts() == [BOTH]
    assert services.commits()[-1] == [(0, 3, None)]


def test_losing_one_partition_of_a_unit_that_failed_writes_the_same_unit_for_the_other() -> None:
    services = Units()
    owner = owner_of(services)
    services.inserting.clear()
    services.refused_once = {BOTH}
    owner.submit(messages(0, range(3)) + messages(1, range(3)))
    owner.poll(wait=False)

    losing = threading.Thread(target=owner.lose, args=({P1},))
    losing.start()
    services.inserting.set()
    losing.join(10)
    poll_until_idle(owner)

    assert services.inserts() == [BOTH]  # the same token: partition 1's rows read again
    assert services.read_again[-1] == [(1, 0, 2)]
    assert services.commits()[-1] == [(0, 3, None)]
    assert owner.assigned == {P0}


def test_a_revoke_writes_the_unit_that_failed_before_the_partitions_later_batches() -> None:
    services = Units()
    owner = owner_of(services)
    services.inserting.clear()
    services.refused_once = {BOTH}
    owner.submit(messages(0, range(6)) + messages(1, range(3)))  # partition 0: two batches
    owner.poll(wait=False)  # the unit of both partitions' first batches is in flight
    losing = threading.Thread(target=owner.lose, args=({P1},))
    losing.start()
    services.inserting.set()
    losing.join(10)  # the unit failed: it is written again for partition 0, first

    owner.revoke({P0})

    assert services.inserts() == [BOTH, "t-0-3-5"]
    assert services.read_again[-2] == [(1, 0, 2)]
    # Step 3 of the unit goes with step 1 of the next batch; never past an unwritten batch.
    assert services.commits()[-2:] == [[(0, 3, f"{INTENT}5")], [(0, 6, None)]]
    assert owner.assigned == set()
