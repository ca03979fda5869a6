"""What the group member (consumer/group/member.py) and its rebalance callbacks
(consumer/group/routes.py) ask of each topic they read: `Pipeline` (consumer/group/loop.py)
is it."""

from __future__ import annotations

from typing import Protocol

from confluent_kafka import Consumer, Message

from consumer.group.rebalance import Rebalance


class Topic(Protocol):
    """One topic on a member. The member calls each method on its own thread."""

    topic: str
    rebalance: Rebalance

    @property
    def busy(self) -> bool:
        """A write is in flight or batches wait for one."""

    @property
    def finishing(self) -> bool:
        """Stopped, caught up or failed: it leaves at this step."""

    def attach(self, consumer: Consumer) -> None:
        """Joining: its commit path, on the member's consumer."""

    def submit(self, messages: list[Message]) -> None:
        """A chunk of its messages, in the order read."""

    def event(self, event: Message) -> None:
        """A partition's end, or a Kafka error that is not fatal."""

    def after(self, shared: bool) -> bool:
        """Once per poll of the member; True when it had nothing to do (quiet), so that the
        member may wait longer for the next message."""

    def fail(self, error: BaseException) -> None:
        """It stops on `error` at the member's next step."""

    def finish(self) -> None:
        """Leaving: drain or abandon what it read. Never raises."""

    def close(self) -> None:
        """Left: nothing of it is read any more."""

    def abandon(self, error: BaseException) -> None:
        """Stopped by `error` before it could leave in order (or join at all)."""
