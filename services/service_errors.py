"""Services that did not answer, or refused what was asked: Kafka, the schema registry and a
Spark master, as the producer and cdfbridge-verify name them (both read the progress topic
and start Spark the same way)."""

from __future__ import annotations

from confluent_kafka import KafkaError

from schemas.errors import CdfBridgeError, ServiceUnavailableError, TerminalError
from services.kafka_errors import describe, passing


class UnreachableError(ServiceUnavailableError):
    def __init__(self, service: str, where: str, attempts: int, cause: str) -> None:
        super().__init__(
            f"{service} at {where} did not answer after {attempts} attempts ({cause}); check "
            "that it runs and that the address in the settings is right"
        )


class SparkUnavailableError(ServiceUnavailableError):
    def __init__(self, master: str, attempts: int, cause: str) -> None:
        self.master = master
        super().__init__(
            f"Spark master {master} did not answer after {attempts} attempts ({cause}); check "
            "that the master runs and that this host reaches it, or fix --master "
            "(CDFBRIDGE_SPARK__MASTER; local[*] runs Spark in this process)"
        )


class KafkaRefusedError(TerminalError):
    def __init__(self, where: str, doing: str, reason: str) -> None:
        super().__init__(
            f"Kafka at {where} refused {doing} ({reason}); check the producer's ACLs and the "
            "topic's settings, then restart it: it resumes after the last whole chunk"
        )


class KafkaUnavailableError(ServiceUnavailableError):
    def __init__(self, where: str, doing: str, reason: str) -> None:
        super().__init__(
            f"Kafka at {where} failed while {doing} ({reason}); check that its brokers run and "
            "that CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS is right. A restart resumes after the last "
            "whole chunk"
        )


def client_failure(error: KafkaError, where: str, doing: str) -> CdfBridgeError:
    """A Kafka client's error (not the transactional producer's) as ours, by its code and
    flags: KafkaUnavailableError when a later attempt can succeed (exit 3), else
    KafkaRefusedError (1)."""
    if passing(error):
        return KafkaUnavailableError(where, doing, describe(error))
    return KafkaRefusedError(where, doing, describe(error))
