"""Everything read and not yet committed: the steps of a batch in their order, and every way
out (a rewind after a failure, revoke, lose, abandon, drain). The writer and the offset
commit are in-process stand-ins; the messages are confluent_kafka.Message objects as
consume() returns them."""

import threading
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from consumer.group.batch import Batcher, Limits, Written
from consumer.group.commit import CommitQueue
from consumer.group.uncommitted import Outcome, Uncommitted
from consumer.group.units import INTENT, UNIT, Unit
from schemas.errors import ServiceUnavailableError
from services.clickhouse_errors import ClickHouseUnavailableError

P0, P1 = ("t", 0), ("t", 1)
Committed = tuple[int, int, str | None]  # partition, offset, metadata


class Services:
    """ClickHouse and the group's offsets, as far as the commit path sees them: what was
    inserted (by dedup token) and committed, in the order it happened."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.refused: set[str] = set()  # tokens whose insert fails, transiently
        self.refused_once: set[str] = set()  # ... the first time only
        self.clickhouse_down = False
        self.kafka_down = False
        self.inserting = threading.Event()  # cleared: an insert waits until it is set
        self.inserting.set()

    def write(self, unit: Unit) -> list[Written]:
        assert self.inserting.wait(10)
        once = unit.token in self.refused_once
        self.refused_once.discard(unit.token)
        if self.clickhouse_down or once or unit.token in self.refused:
            self.events.append(("insert failed", unit.token))
            raise ClickHouseUnavailableError("ClickHouse is unavailable")
        self.events.append(("insert", unit.token))
        return [Written(len(batch.values()), 0) for batch in unit.batches]

    def commit(self, offsets: list[TopicPartition]) -> None:
        if self.kafka_down:
            raise ServiceUnavailableError("the group coordinator moved")
        self.events.append(("commit", sorted(committed(tp) for tp in offsets)))

    def inserts(self) -> list[str]:
        return [what for kind, what in self.events if kind == "insert"]

    def commits(self) -> list[list[Committed]]:
        return [what for kind, what in self.events if kind == "commit"]


def committed(tp: TopicPartition) -> Committed:
    return (tp.partition, tp.offset, tp.metadata)


def messages(partition: int, offsets: Iterable[int]) -> list[Message]:
    return [Message(topic="t", partition=partition, offset=n, value=b"v") for n in offsets]


def owner_of(services: Services, rows: int = 3) -> Uncommitted:
    queue = CommitQueue(services.write, services.commit, lambda *_: None)
    owner = Uncommitted(Batcher(Limits(rows=rows)), queue)
    owner.assign([TopicPartition("t", 0, -1001), TopicPartition("t", 1, -1001)])
    return owner


def poll_until_idle(owner: Uncommitted) -> Outcome:
    """Poll as the loop does until nothing is pending or in flight, or a write failed."""
    deadline = time.monotonic() + 10
    while True:
        outcome = owner.poll()
        if outcome.failed is not None or not owner.busy:
            return outcome
        assert time.monotonic() < deadline, "the commit path did not settle"
        time.sleep(0.001)


def test_a_batch_end_is_recorded_before_its_insert_and_its_offsets_committed_after() -> None:
    services = Services()
    owner = owner_of(services)

    owner.submit(messages(0, range(3)))
    assert poll_until_idle(owner) == Outcome(written=1)

    assert services.events == [
        ("commit", [(0, 0, f"{INTENT}2")]),
        ("insert", "t-0-0-2"),
        ("commit", [(0, 3, None)]),
    ]


def test_partitions_start_at_their_committed_offset_else_at_the_earliest() -> None:
    services = Services()
    owner = Uncommitted(Batcher(Limits()), CommitQueue(services.write, services.commit, print))

    starts = owner.assign([TopicPartition("t", 0, 42), TopicPartition("t", 1, -1001)])

    assert [committed(tp) for tp in starts] == [(0, 42, None), (1, OFFSET_BEGINNING, None)]
    assert owner.assigned == {P0, P1}


def test_a_failed_insert_drops_what_was_read_and_rereads_the_same_batch() -> None:
    services = Services()
    owner = owner_of(services, rows=20)
    owner.submit(messages(0, range(3)))
    owner.ended(P0)  # read to the end: the batch is cut at offset 2
    services.clickhouse_down = True

    outcome = poll_until_idle(owner)

    assert isinstance(outcome.failed, ClickHouseUnavailableError)
    assert [committed(tp) for tp in outcome.rewind] == [(0, 0, None), (1, OFFSET_BEGINNING, None)]
    assert (owner.busy, owner.buffered_rows()) == (False, 0)
    # Read again from offset 0, now with more behind it: the batch is cut where it was.
    services.clickhouse_down = False
    owner.submit(messages(0, range(10)))
    poll_until_idle(owner)
    assert services.inserts() == ["t-0-0-2"]
    assert owner.buffered_rows() == 7


def test_offsets_are_never_committed_past_a_batch_that_was_not_written() -> None:
    services = Services()
    owner = owner_of(services)
    services.refused = {"t-0-3-5"}

    owner.submit(messages(0, range(9)))  # three batches of partition 0
    outcome = poll_until_idle(owner)

    assert outcome.failed is not None
    assert services.inserts() == ["t-0-0-2"]
    assert max(offset for batch in services.commits() for _, offset, _ in batch) == 3
    assert [committed(tp) for tp in outcome.rewind][0] == (0, 3, None)
    services.refused.clear()
    owner.submit(messages(0, range(3, 9)))
    poll_until_idle(owner)
    assert services.inserts() == ["t-0-0-2", "t-0-3-5", "t-0-6-8"]


def test_a_commit_that_fails_rewinds_to_the_last_offsets_committed() -> None:
    services = Services()
    owner = owner_of(services)
    owner.submit(messages(0, range(3)))
    poll_until_idle(owner)
    services.kafka_down = True

    owner.submit(messages(0, range(3, 6)))
    outcome = poll_until_idle(owner)

    assert isinstance(outcome.failed, ServiceUnavailableError)
    assert services.inserts() == ["t-0-0-2"]  # the next batch's step 1 failed: not written
    assert [committed(tp) for tp in outcome.rewind][0] == (0, 3, None)


def test_revoked_partitions_are_written_and_committed_before_they_go() -> None:
    services = Services()
    owner = owner_of(services)
    owner.submit(messages(0, range(2)) + messages(1, range(2)))

    owner.revoke({P0})

    assert services.inserts() == ["t-0-0-1"]
    assert services.commits()[-1] == [(0, 2, None)]
    assert owner.assigned == {P1}
    assert owner.buffered_rows() == 2  # partition 1 is still this member's


def test_a_revoked_partition_is_left_uncommitted_after_a_batch_that_failed() -> None:
    services = Services()
    owner = owner_of(services)
    services.refused = {"t-0-0-2"}
    owner.submit(messages(0, range(5)))

    owner.revoke({P0})

    assert services.inserts() == []
    assert services.commits() == [[(0, 0, f"{INTENT}2")]]
    assert owner.assigned == {P1}


def test_a_write_failing_during_a_revoke_rewinds_the_partitions_kept() -> None:
    services = Services()
    owner = owner_of(services, rows=20)
    services.refused = {"t-1-0-2"}
    services.inserting.clear()
    owner.submit(messages(1, range(3)))
    owner.ended(P1)
    owner.poll()  # partition 1's batch is in flight
    services.inserting.set()

    owner.revoke({P0})
    owner.submit(messages(1, range(3, 5)))  # read on before the loop polls: not kept
    outcome = owner.poll()

    assert isinstance(outcome.failed, ClickHouseUnavailableError)
    assert [committed(tp) for tp in outcome.rewind] == [(1, 0, None)]
    assert owner.buffered_rows() == 0
    services.refused.clear()
    owner.submit(messages(1, range(5)))
    poll_until_idle(owner)
    assert services.inserts() == ["t-1-0-2"]  # cut where its end was recorded


def test_lost_partitions_are_dropped_unwritten() -> None:
    services = Services()
    owner = owner_of(services)
    owner.submit(messages(0, range(2)))

    assert owner.lose({P0}) == 2

    assert services.events == []
    assert owner.assigned == {P1}


def test_abandoning_leaves_everything_uncommitted_and_writes_nothing_more() -> None:
    services = Services()
    owner = owner_of(services)
    services.inserting.clear()
    owner.submit(messages(0, range(5)))
    owner.poll()  # the first batch in flight
    services.inserting.set()

    owner.abandon()
    owner.revoke({P0, P1})  # as closing the consumer does

    assert services.inserts() == ["t-0-0-2"]
    assert services.commits() == [[(0, 0, f"{INTENT}2")]]


def test_draining_writes_and_commits_everything_read() -> None:
    services = Services()
    owner = owner_of(services, rows=100)
    owner.submit(messages(0, range(4)) + messages(1, range(2)))

    assert owner.drain(time.monotonic() + 10, max_backoff_s=0.01)

    # Both partitions' batches in one insert, recorded in each partition before it.
    assert services.inserts() == ["t-0:0-3+1:0-1"]
    unit = f"{UNIT}0:0-3,1:0-1"
    assert services.commits() == [[(0, 0, unit), (1, 0, unit)], [(0, 4, None), (1, 2, None)]]


def test_draining_retries_a_failed_write_with_the_same_token() -> None:
    services = Services()
    owner = owner_of(services, rows=100)
    owner.submit(messages(0, range(4)))
    services.refused_once = {"t-0-0-3"}

    assert owner.drain(time.monotonic() + 10, max_backoff_s=0.01)

    assert services.events == [
        ("commit", [(0, 0, f"{INTENT}3")]),
        ("insert failed", "t-0-0-3"),
        ("commit", [(0, 0, f"{INTENT}3")]),
        ("insert", "t-0-0-3"),
        ("commit", [(0, 4, None)]),
    ]


def test_after_the_drain_deadline_nothing_is_written_not_even_on_revoke() -> None:
    services = Services()
    owner = owner_of(services, rows=100)
    owner.submit(messages(0, range(4)))
    services.clickhouse_down = True

    assert not owner.drain(time.monotonic() + 0.2, max_backoff_s=0.05)
    attempts = len(services.events)
    services.clickhouse_down = False
    owner.revoke({P0, P1})  # as closing the consumer does

    assert len(services.events) == attempts
    assert services.inserts() == []
    assert owner.buffered_rows() == 0


def test_caught_up_once_every_partition_owned_is_read_to_its_end() -> None:
    owner = owner_of(Services())

    owner.ended(P0)
    assert not owner.caught_up(frozenset())
    owner.ended(P1)
    assert owner.caught_up(frozenset())
    assert not owner.caught_up(frozenset({("t", 2)}))  # a partition not assigned yet
    owner.submit(messages(1, [0]))
    assert not owner.caught_up(frozenset())
