"""The process's write pool: every topic's commit path hands its writes to one bounded pool,
one write in flight per topic, so that each partition's batches stay in order, a slow table
holds only its own writes up, and the threads do not grow with the number of topics. The
writer and the offset commit are in-process stand-ins."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import TopicPartition

from consumer.group.batch import PartitionBatch, Written
from consumer.group.commit import CommitQueue
from consumer.group.units import Unit


class Table:
    """One topic's ClickHouse table: what was inserted, and how many inserts ran at once."""

    def __init__(self) -> None:
        self.inserted: list[int] = []  # first offsets, in the order inserted
        self.committed: list[int] = []
        self.gate = threading.Event()  # cleared: an insert waits until it is set
        self.gate.set()
        self.running = self.most_at_once = 0
        self._lock = threading.Lock()

    def write(self, unit: Unit) -> list[Written]:
        (batch,) = unit.batches
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        assert self.gate.wait(10)
        time.sleep(0.01)
        with self._lock:
            self.running -= 1
            self.inserted.append(batch.first_offset)
        return [Written(1, 0)]

    def commit(self, offsets: list[TopicPartition]) -> None:
        self.committed += [tp.offset for tp in offsets if not tp.metadata]


def batches(topic: str, count: int) -> list[PartitionBatch]:
    return [PartitionBatch(topic, 0, n, n, [b"v"]) for n in range(count)]


def queue_of(table: Table, pool: ThreadPoolExecutor) -> CommitQueue:
    return CommitQueue(table.write, table.commit, lambda *_: None, pool)


def settle(queues: list[CommitQueue], timeout_s: float = 10) -> None:
    """Advance every queue, as the member does, until none is busy."""
    deadline = time.monotonic() + timeout_s
    while any(q.busy for q in queues):
        for queue in queues:
            queue.advance(wait=False)
        assert time.monotonic() < deadline, "the writes did not settle"
        time.sleep(0.001)


def test_each_topic_writes_one_batch_at_a_time_in_order_on_the_shared_pool() -> None:
    tables = [Table() for _ in range(6)]
    with ThreadPoolExecutor(3) as pool:
        queues = [queue_of(table, pool) for table in tables]
        for number, queue in enumerate(queues):
            queue.submit(batches(f"t{number}", 5))
        settle(queues)
    for table in tables:
        assert table.inserted == [0, 1, 2, 3, 4]
        assert table.committed[-1] == 5  # after the last batch, its offset + 1
        assert table.most_at_once == 1


def test_a_slow_table_holds_up_only_its_own_writes() -> None:
    slow, fast = Table(), Table()
    slow.gate.clear()
    with ThreadPoolExecutor(2) as pool:
        queues = [queue_of(slow, pool), queue_of(fast, pool)]
        queues[0].submit(batches("slow", 2))
        queues[1].submit(batches("fast", 4))
        settle(queues[1:])
        assert fast.inserted == [0, 1, 2, 3]
        assert slow.inserted == []  # its first insert still runs, its second waits
        slow.gate.set()
        settle(queues)
    assert slow.inserted == [0, 1]


def test_a_queue_closed_on_the_shared_pool_waits_for_its_write_and_leaves_the_pool_open() -> None:
    left, staying = Table(), Table()
    left.gate.clear()
    with ThreadPoolExecutor(1, thread_name_prefix="clickhouse") as pool:
        leaving = queue_of(left, pool)
        leaving.submit(batches("left", 1))
        leaving.advance(wait=False)  # its write is under way
        closed = threading.Thread(target=leaving.close)
        closed.start()
        closed.join(0.2)
        assert closed.is_alive()  # waits for the write under way
        left.gate.set()
        closed.join(10)
        assert not closed.is_alive()
        assert left.inserted == [0]
        queue = queue_of(staying, pool)
        queue.submit(batches("staying", 2))
        settle([queue])
    assert staying.inserted == [0, 1]
