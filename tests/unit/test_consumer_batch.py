"""Batches: one per partition, cut by rows, bytes, age, or a recorded batch end."""

from confluent_kafka import Message as KafkaMessage

from consumer.group.batch import Batcher, Limits


def message(partition: int, offset: int, value: bytes | None = b"v") -> KafkaMessage:
    """A confluent_kafka.Message as consume() returns it, on topic `t`."""
    return KafkaMessage(topic="t", partition=partition, offset=offset, value=value)


def test_batch_closes_at_the_row_limit_per_partition() -> None:
    batcher = Batcher(Limits(rows=2))

    assert batcher.extend([message(0, 10)]) == []
    assert batcher.extend([message(1, 5)]) == []
    [done] = batcher.extend([message(0, 11)])

    assert (done.partition, done.first_offset, done.last_offset) == (0, 10, 11)
    assert done.dedup_token == "t-0-10-11"  # noqa: S105 - not a password
    assert batcher.buffered_rows() == 1


def test_batch_closes_at_the_byte_limit() -> None:
    batcher = Batcher(Limits(nbytes=10))

    assert batcher.extend([message(0, 0, b"12345")]) == []
    [done] = batcher.extend([message(0, 1, b"67890")])

    assert done.values() == [b"12345", b"67890"]


def test_batch_is_due_after_its_age_limit() -> None:
    batcher = Batcher(Limits(seconds=5))
    batcher.extend([message(0, 0)])
    started = batcher.close()[0].started
    batcher.extend([message(0, 1)])

    assert batcher.due(now=started + 1) == []
    [done] = batcher.due(now=started + 3600)
    assert done.first_offset == 1


def test_tombstones_move_the_offsets_but_are_not_inserted() -> None:
    batcher = Batcher(Limits())
    batcher.extend([message(0, 0)])
    batcher.extend([message(0, 1, None)])

    [done] = batcher.close()

    assert (done.last_offset, done.values()) == (1, [b"v"])


def test_a_tombstone_carrying_its_delete_is_inserted_as_that_delete() -> None:
    batcher = Batcher(Limits())
    carrying = KafkaMessage(
        topic="t", partition=0, offset=2, value=None, headers=[("cdfbridge.delete", b"del")]
    )
    batcher.extend([message(0, 0), message(0, 1, None), carrying, message(0, 3)])

    [done] = batcher.close()

    assert (done.last_offset, done.values()) == (3, [b"v", b"del", b"v"])


def test_recorded_batch_end_cuts_the_first_batch_after_a_restart() -> None:
    batcher = Batcher(Limits(rows=100))
    batcher.cut_at(("t", 0), 2)

    batcher.extend([message(0, 0)])
    batcher.extend([message(0, 1)])
    [done] = batcher.extend([message(0, 2)])
    batcher.extend([message(0, 3)])

    assert (done.first_offset, done.last_offset) == (0, 2)
    assert batcher.due(now=float("inf"))[0].first_offset == 3


def test_missing_recorded_end_cuts_before_the_next_offset() -> None:
    batcher = Batcher(Limits(rows=100))
    batcher.cut_at(("t", 0), 5)
    batcher.extend([message(0, 4)])

    [done] = batcher.extend([message(0, 7)])

    assert (done.first_offset, done.last_offset) == (4, 4)


def test_a_chunk_is_split_at_the_row_limit() -> None:
    batcher = Batcher(Limits(rows=3))

    done = batcher.extend([message(p, n) for n in range(7) for p in (0, 1)])

    assert sorted((b.partition, b.first_offset, b.last_offset) for b in done) == [
        (0, 0, 2),
        (0, 3, 5),
        (1, 0, 2),
        (1, 3, 5),
    ]
    assert sorted(b.key for b in batcher.close()) == [("t", 0), ("t", 1)]


def test_lost_partitions_are_dropped() -> None:
    batcher = Batcher(Limits())
    batcher.extend([message(0, 0)])
    batcher.extend([message(1, 0)])

    assert batcher.drop([("t", 0)]) == 1
    assert [b.partition for b in batcher.close()] == [1]


def test_a_partition_read_to_its_end_cuts_a_batch_of_a_hundredth_of_the_row_limit() -> None:
    batcher = Batcher(Limits(rows=1_000))
    batcher.extend([message(0, n) for n in range(10)] + [message(1, n) for n in range(9)])

    [done] = batcher.ended({("t", 0)})

    assert (done.partition, done.rows) == (0, 10)
    assert batcher.ended({("t", 0), ("t", 1)}) == []  # a trickle waits for the age limit


def test_partitions_all_read_to_their_end_are_cut_together_once_they_hold_enough() -> None:
    batcher = Batcher(Limits(rows=1_000))  # a hundredth: 10 rows
    batcher.extend([message(p, n) for p in range(3) for n in range(4)])

    assert batcher.ended({("t", 0), ("t", 1)}) == []  # partition 2 is still being read
    done = batcher.ended({("t", 0), ("t", 1), ("t", 2)})

    assert [(b.partition, b.rows) for b in done] == [(0, 4), (1, 4), (2, 4)]
    assert not batcher.holding


def test_two_topics_partition_0_are_two_batches_even_when_their_messages_interleave() -> None:
    batcher = Batcher(Limits(rows=10))
    a, b = "orders", "customers"
    messages = [
        KafkaMessage(topic=topic, partition=0, offset=offset, value=b"v")
        for topic, offset in ((a, 5), (a, 6), (b, 5), (a, 7), (b, 6))
    ]

    assert batcher.extend(messages) == []  # none full
    closed = {(batch.topic, batch.partition): batch for batch in batcher.close()}

    assert batcher.last_seen == {(a, 0), (b, 0)}
    assert (closed[(a, 0)].first_offset, closed[(a, 0)].last_offset) == (5, 7)
    assert (closed[(b, 0)].first_offset, closed[(b, 0)].last_offset) == (5, 6)
    assert closed[(a, 0)].rows == 3 and closed[(b, 0)].rows == 2
