"""Kafka's errors sorted by their codes, never by their text: which ones a later attempt can
get past, and which ones stop the process."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from schemas.errors import ConfigError

Client = TypeVar("Client")

# librdkafka sets `retriable()` only on some errors: never on a commit's result, nor on the
# error a failed commit raises. These codes mean a broker or the group coordinator is away,
# moving or busy (messages timed out waiting for one included), or that the group is
# rebalancing; a later attempt (or the partition's next owner) gets past them.
PASSING = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError._WAIT_COORD,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._ASSIGNMENT_LOST,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_COORDINATOR,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError.CONCURRENT_TRANSACTIONS,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.STALE_MEMBER_EPOCH,
    }
)


def passing(error: KafkaError) -> bool:
    """Whether a later attempt can succeed: librdkafka says so, or the code is one above."""
    return not error.fatal() and (error.retriable() or error.code() in PASSING)


def describe(error: KafkaError) -> str:
    """`NAME: text`, e.g. `UNKNOWN_TOPIC_OR_PART: Broker: Unknown topic or partition`."""
    return f"{error.name()}: {error.str()}"


def error_of(exc: KafkaException) -> KafkaError:
    """The KafkaError a KafkaException carries (confluent-kafka puts it first in args)."""
    error = exc.args[0] if exc.args else None
    return error if isinstance(error, KafkaError) else KafkaError(KafkaError._FAIL, str(exc))


def build(kind: Callable[[dict[str, Any]], Client], config: Mapping[str, Any]) -> Client:
    """A Producer, Consumer or AdminClient; settings librdkafka refuses (an unknown property,
    a malformed value) → ConfigError naming where they come from."""
    try:
        return kind(dict(config))
    except KafkaException as exc:
        error = error_of(exc)
        if error.code() != KafkaError._INVALID_ARG:
            raise
        raise ConfigError(
            f"the Kafka client refused its settings ({error.str()}); check the CDFBRIDGE_KAFKA__* "
            "settings, CDFBRIDGE_KAFKA__PROPERTIES above all"
        ) from exc
