"""The group's rebalance callbacks, served by librdkafka inside consume() and close().

Cooperative-sticky assignment moves only the partitions that change owner:
- assigned: each starts at the offset its group committed, read here and handed to
  librdkafka, which spares it a second look-up (and its 100 ms wait before resetting a
  partition without one); a recorded batch end is cut at again. One the group has no
  offset for starts at `first` (consumer/rebuild/first_read.py: its generation's start, or where a
  bootstrap from the lake left off), and any in `moved` where a rebuild of its table left
  off (consumer/rebuild/auto_rebuild.py); one whose committed offset is below `floor` (what its
  table's rows reach: consumer/rebuild/first_read.py) starts there. All are committed at once, so
  a restart starts there too. Else a partition starts at the earliest;
- revoked: what was read of them is written and committed before they go;
- lost (this member was dropped from the group, e.g. frozen past the session timeout):
  their buffers are dropped unwritten, since another member may already read them.
An assignment that arrives while the topic leaves starts nothing (its partitions are
assigned paused): the topic is leaving, and librdkafka does not answer the committed-offsets
look-up during close() (it waits out the timeout).
What happens to the batches is up to `Uncommitted` (consumer/group/uncommitted.py).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import Consumer, TopicPartition

from consumer.group import kafka
from consumer.group.uncommitted import Keys, Uncommitted

log = logging.getLogger(__name__)
R = TypeVar("R")
Callback = Callable[[R, Consumer, list[TopicPartition]], None]


def _caught(callback: Callback[R]) -> Callback[R]:
    """Every exception leaves a callback as one Python has caught. confluent-kafka (2.16, on
    Python before 3.12) keeps what a callback raised as PyErr_Fetch hands it, and raises it
    again from consume() by its value's class: an error its C code raised is not normalized
    yet, its value is a bare KafkaError, and what comes out is no exception at all, which
    no `except` catches (tests/integration/test_rebalance_errors.py). Caught here, it is."""

    @functools.wraps(callback)
    def call(self: R, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        try:
            callback(self, consumer, partitions)
        except BaseException:  # noqa: TRY203 - caught to be normalized, raised as it was
            raise

    return call


class Rebalance:
    """One topic's callbacks, called by the member for that topic's partitions
    (consumer/group/member.py); `owner` is set once the topic joins the member."""

    def __init__(self) -> None:
        self.owner: Uncommitted | None = None
        self.joined = False  # the group has handed this member its (maybe empty) assignment
        self.first: dict[int, int] = {}  # partition → offset, for one without a committed one
        # partition → offset, whatever the group committed: where a rebuild left off
        # (consumer/rebuild/auto_rebuild.py); committed on assignment, once.
        self.moved: dict[int, int] = {}
        self.floor: dict[int, int] = {}  # partition → the lowest offset it may start at
        self.closing = False  # set before close(): an assignment then starts nothing

    @_caught
    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.joined = True
        if not partitions:
            # Another member's rebalance hands this one nothing new. Asking for the committed
            # offsets of no partition waits out the timeout when it comes during close().
            return
        if self.owner is None or self.closing:  # closed before any read, or closing now
            # Assigned as they are, read by nobody: the member's other topics may have
            # assigned theirs in this callback, so librdkafka would not assign these.
            consumer.incremental_assign(partitions)
            consumer.pause(partitions)
            return
        committed = self._started(consumer, kafka.committed(consumer, partitions))
        consumer.incremental_assign(self.owner.assign(committed))
        log.info("assigned", extra=_where(partitions))

    def _started(self, consumer: Consumer, committed: list[TopicPartition]) -> list[TopicPartition]:
        """committed, with the partitions `start_of` moves elsewhere moved, and committed
        there at once."""
        fresh = {
            (tp.topic, tp.partition): TopicPartition(tp.topic, tp.partition, offset)
            for tp in committed
            if (offset := self.start_of(tp)) is not None
        }
        if fresh:
            kafka.commit(consumer, list(fresh.values()))
            log.info("start offsets committed", extra=_where(list(fresh.values())))
        return [fresh.get((tp.topic, tp.partition), tp) for tp in committed]

    def start_of(self, committed: TopicPartition) -> int | None:
        """Where a partition starts when not at its committed offset."""
        partition = committed.partition
        if partition in self.moved:
            return self.moved.pop(partition)
        start = self.first.get(partition) if committed.offset < 0 else committed.offset
        lowest = self.floor.get(partition)
        if start is not None and lowest is not None and start < lowest:
            log.warning(
                "the group's offset is below what its table holds: starting there",
                extra={"topic": committed.topic, "partition": partition, "offset": start},
            )
            return lowest
        return None if start == committed.offset else start

    @_caught
    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.owner is not None:
            self.owner.revoke(_keys(partitions))
        log.info("revoked", extra=_where(partitions))

    @_caught
    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        dropped = self.owner.lose(_keys(partitions)) if self.owner is not None else 0
        log.warning(
            "partitions lost, buffers dropped", extra={**_where(partitions), "rows": dropped}
        )


def _keys(partitions: list[TopicPartition]) -> Keys:
    return {(tp.topic, tp.partition) for tp in partitions}


def _where(partitions: list[TopicPartition]) -> dict[str, object]:
    """For a log line: the topic (a member reads one) and the partition numbers."""
    topics = sorted({str(tp.topic) for tp in partitions})
    return {"topic": ",".join(topics), "partitions": sorted(tp.partition for tp in partitions)}
