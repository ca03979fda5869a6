"""What Kafka answers when it refuses a chunk handed to a transaction: the error, and the
message it names when one does."""

from __future__ import annotations

from confluent_kafka import KafkaError

from producer.publish.handed import Chunk


class Refused(Exception):  # noqa: N818 - a result handed back, named by producer/publish/publish.py
    """Kafka's answer to one chunk: its error, and the message it names when one does (a
    message too large: its key, its version when the client refused it, its size)."""

    def __init__(
        self,
        error: KafkaError,
        key: bytes | None = None,
        version: str | None = None,
        size: int | None = None,
    ) -> None:
        super().__init__(error.str())
        self.error, self.key, self.version, self.size = error, key, version, size


class ChunksRefused(Exception):  # noqa: N818 - the transactor's control flow
    """Chunks to take out of a transaction, each with Kafka's refusal."""

    def __init__(self, refused: dict[Chunk, Refused]) -> None:
        super().__init__(f"{len(refused)} chunks refused")
        self.refused = refused
