"""Where the group's offsets stand for each partition this member owns, and the commits owed
to it: step 1 and step 3 of consumer/group/commit.py are owed here, and go out together in one
request. A rewind reads a partition again from where its offsets stand."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from confluent_kafka import TopicPartition

from consumer.group.batch import TopicPartitionKey

Commit = Callable[[list[TopicPartition]], None]  # one synchronous offset commit (kafka.py)


class Positions:
    def __init__(self, commit: Commit) -> None:
        self.commit = commit
        # The last offset committed per owned partition, with its metadata (a batch end).
        self.committed: dict[TopicPartitionKey, TopicPartition] = {}
        self._owed: dict[TopicPartitionKey, TopicPartition] = {}  # not sent yet

    def track(self, committed: Iterable[TopicPartition]) -> None:
        """Newly assigned partitions, at the offsets their group committed."""
        self.committed.update(((tp.topic, tp.partition), tp) for tp in committed)

    def owe(self, offset: TopicPartition) -> None:
        """A commit to send with the next `flush`; it replaces one owed for the partition."""
        self._owed[(offset.topic, offset.partition)] = offset

    @property
    def owing(self) -> bool:
        return bool(self._owed)

    def flush(self) -> None:
        """Send the owed commits in one request. On a transient error they stay owed."""
        if self._owed:
            offsets = list(self._owed.values())
            self.commit(offsets)
            self._owed.clear()
            self.track(offsets)

    def drop(self, keys: Iterable[TopicPartitionKey] | None = None) -> None:
        """Forget the commits owed for `keys` (all when None)."""
        for key in list(self._owed) if keys is None else keys:
            self._owed.pop(key, None)

    def forget(self, keys: Iterable[TopicPartitionKey]) -> None:
        """Partitions no longer owned."""
        for key in keys:
            self._owed.pop(key, None)
            self.committed.pop(key, None)
