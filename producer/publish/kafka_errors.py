"""The transactional producer's Kafka failures, sorted on Kafka's error codes and flags, never
on text: fenced by a newer producer, fatal, worth a restart later, or refused for good."""

from __future__ import annotations

from confluent_kafka import KafkaError

from producer.errors import FencedError, KafkaFatalError
from schemas.errors import CdfBridgeError
from services.kafka_errors import describe, error_of
from services.service_errors import client_failure

__all__ = ["FENCED", "error_of", "fatal", "kafka_failure"]

# A newer producer with the same transactional.id has taken over (librdkafka raises _FENCED;
# the broker's codes are PRODUCER_FENCED and, from older brokers, INVALID_PRODUCER_EPOCH).
FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)


def fatal(error: KafkaError) -> bool:
    """Whether the producer handle can do nothing more: fenced, or a fatal error."""
    return error.code() in FENCED or error.fatal()


def kafka_failure(
    error: KafkaError, where: str, doing: str, transactional_id: str
) -> CdfBridgeError:
    """error as ours: FencedError (exit 4), KafkaFatalError (1), else as any client's error
    (services/service_errors.py): KafkaUnavailableError when a later attempt can succeed (3),
    KafkaRefusedError (1)."""
    if error.code() in FENCED:
        return FencedError(transactional_id)
    if error.fatal():
        return KafkaFatalError(transactional_id, doing, describe(error))
    return client_failure(error, where, doing)
