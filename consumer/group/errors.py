"""The consumer's errors. Transient ones keep the offsets and retry; terminal ones stop the
consumer (or, for one message, send it to the dead-letter topic)."""

from __future__ import annotations

from schemas.errors import ServiceUnavailableError, TerminalError, TransientError


class RegistryUnavailableError(ServiceUnavailableError):
    """The schema registry did not answer: retry later."""


class NotPublishedYetError(TransientError):
    """The registry has no schema for the topic yet: the producer has not published to it.
    A consumer started alongside its producer waits for it, looking every second."""

    poll_s = 1.0


class PoisonMessageError(TerminalError):
    """One message cannot be decoded or does not fit the table: it goes to the DLQ."""


class CommitRefusedError(TerminalError):
    """Kafka refused to commit an offset for a reason a retry cannot get past."""

    def __init__(self, topic: str, where: str, reason: str) -> None:
        super().__init__(
            f"Kafka refused to commit {where} of {topic} ({reason}); the rows are in "
            "ClickHouse, and a restart reads them again (deduplicated). Check that the "
            "consumer may commit (Read on its group and topic) and that the partition exists, "
            "then restart it"
        )


class OffsetsRefusedError(TerminalError):
    """Kafka refused to say which offsets the group committed."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(
            f"Kafka refused to give the committed offsets of {topic} ({reason}); check that "
            "the consumer may read its group's offsets (Describe and Read on the group), then "
            "restart it"
        )


class KafkaFatalError(TerminalError):
    """librdkafka reported a fatal error: this consumer can do nothing more."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"Kafka reported a fatal error to the consumer ({reason}); restart it: batches "
            "not committed yet are read again and deduplicated. If it happens again, check "
            "the brokers' logs and the consumer's Kafka settings (CDFBRIDGE_KAFKA__*)"
        )


class TopicRefusedError(TerminalError):
    """Kafka refused to describe the topic (its id keys the insert deduplication tokens)."""

    def __init__(self, topic: str, reason: str) -> None:
        super().__init__(
            f"Kafka refused to describe topic {topic} ({reason}); check that the topic "
            "exists and that the consumer may describe it (Describe on the topic)"
        )
