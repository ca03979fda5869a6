"""The member's rebalance callbacks, served by librdkafka inside its consume() and close():
each topic's partitions go to that topic's `Rebalance` (consumer/group/rebalance.py).

librdkafka unassigns revoked and lost partitions after the callback. It assigns those handed
only when the callback assigned none, so every partition handed is assigned here: a topic
that has left, or whose callback failed, gets its partitions assigned paused, read by
nobody, until the next rebalance takes them away.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import groupby
from typing import cast

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from consumer.group.rebalance import _caught
from consumer.group.topic import Topic

_TOPIC = cast(Callable[[Message], str], Message.topic)


def by_topic(items: list[Message]) -> dict[str, list[Message]]:
    """Messages (or events) by topic, each topic's in the order read: runs found in C."""
    found: dict[str, list[Message]] = {}
    for topic, run in groupby(items, key=_TOPIC):
        found.setdefault(topic, []).extend(run)
    return found


def partitions_by_topic(partitions: list[TopicPartition]) -> dict[str, list[TopicPartition]]:
    """Partitions by topic (a rebalance's list: a few, not per message)."""
    found: dict[str, list[TopicPartition]] = {}
    for tp in partitions:
        found.setdefault(tp.topic, []).append(tp)
    return found


class Routes:
    """The callbacks of a member whose subscribed topics are `topics` (the member's own
    dict, changed only on the member's thread, where the callbacks run too)."""

    def __init__(self, topics: dict[str, Topic]) -> None:
        self._topics = topics
        self.joined = threading.Event()  # the group handed the member its assignment

    @_caught
    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.joined.set()
        for topic, taken in partitions_by_topic(partitions).items():
            pipeline = self._topics.get(topic)
            if pipeline is None:  # left since
                _assign_paused(consumer, taken)
                continue
            try:
                pipeline.rebalance.on_assign(consumer, taken)
            except Exception as exc:  # noqa: BLE001 - the topic's run raises it
                pipeline.fail(exc)
                _assign_paused(consumer, taken)

    @_caught
    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._route("on_revoke", consumer, partitions)

    @_caught
    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._route("on_lost", consumer, partitions)

    def _route(self, name: str, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Revoked or lost partitions to their topics; librdkafka unassigns them after."""
        for topic, taken in partitions_by_topic(partitions).items():
            pipeline = self._topics.get(topic)
            if pipeline is not None:
                try:
                    getattr(pipeline.rebalance, name)(consumer, taken)
                except Exception as exc:  # noqa: BLE001 - the topic's run raises it
                    pipeline.fail(exc)


def _assign_paused(consumer: Consumer, partitions: list[TopicPartition]) -> None:
    """Partitions assigned, read by nobody, until a rebalance takes them away."""
    try:
        consumer.incremental_assign(partitions)
        consumer.pause(partitions)
    except KafkaException:
        pass  # assigned before the error
