"""The producer's Kafka failures are sorted on Kafka's codes and flags, never the text:
fenced (exit 4), fatal (1), worth a restart later (3), refused for good (1)."""

import pytest
from confluent_kafka import KafkaError

from producer.errors import FencedError, KafkaFatalError
from producer.publish.kafka_errors import kafka_failure
from producer.publish.publish import Publisher
from producer.publish.refusals import Refused
from services.service_errors import KafkaRefusedError, KafkaUnavailableError, client_failure

E = KafkaError


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (E(E._FENCED, fatal=True), FencedError),
        (E(E.PRODUCER_FENCED), FencedError),
        (E(E.INVALID_PRODUCER_EPOCH, fatal=True), FencedError),
        (E(E._GAPLESS_GUARANTEE, fatal=True), KafkaFatalError),
        (E(E.UNKNOWN_PRODUCER_ID, fatal=True), KafkaFatalError),
        (E(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal=True), KafkaFatalError),
        # The text says fenced, the code does not: a fatal error, not a takeover.
        (E(E._FATAL, "producer fenced by a newer instance", fatal=True), KafkaFatalError),
        (E(E._TIMED_OUT, retriable=True), KafkaUnavailableError),
        (E(E._MSG_TIMED_OUT, txn_requires_abort=True), KafkaUnavailableError),
        (E(E._TRANSPORT), KafkaUnavailableError),
        (E(E.NOT_ENOUGH_REPLICAS, txn_requires_abort=True), KafkaUnavailableError),
        (E(E.MSG_SIZE_TOO_LARGE, txn_requires_abort=True), KafkaRefusedError),
        (E(E.TOPIC_AUTHORIZATION_FAILED, txn_requires_abort=True), KafkaRefusedError),
        (E(E.UNKNOWN_TOPIC_OR_PART), KafkaRefusedError),
    ],
    ids=lambda v: v.name() if isinstance(v, KafkaError) else v.__name__,
)
def test_a_producer_failure_is_sorted_by_code_and_flags(
    error: KafkaError, expected: type[Exception]
) -> None:
    found = kafka_failure(error, "broker:9092", "publishing version 7", "cdfbridge-orders")

    assert type(found) is expected
    if expected is not FencedError:
        assert error.name() in str(found)
        assert "publishing version 7" in str(found)


def test_a_reader_of_the_progress_is_never_fenced() -> None:
    found = client_failure(E(E._FENCED, fatal=True), "broker:9092", "reading t.progress")

    assert type(found) is KafkaRefusedError


def test_a_fatal_error_that_is_no_fencing_stops_the_publisher_naming_it() -> None:
    publisher = Publisher({"bootstrap.servers": "127.0.0.1:1"}, "orders")
    fatal = Refused(E(E._GAPLESS_GUARANTEE, "gap in sequence", fatal=True))

    found = publisher.named(fatal, 7, "cdfbridge-orders")

    assert type(found) is KafkaFatalError
    assert "cdfbridge-orders while publishing the chunk up to version 7" in str(found)
    assert "Restart" in str(found)


def test_a_fatal_size_refusal_is_no_change_too_large() -> None:
    publisher = Publisher({"bootstrap.servers": "127.0.0.1:1"}, "orders")

    found = publisher.named(Refused(E(E.MSG_SIZE_TOO_LARGE, fatal=True)), 7, "cdfbridge-orders")

    assert type(found) is KafkaFatalError


@pytest.mark.parametrize("properties", [{"no.such.property": "1"}, {"linger.ms": "soon"}])
def test_kafka_client_settings_librdkafka_refuses_are_a_setting_to_fix(
    properties: dict[str, str],
) -> None:
    from producer.publish.publish import Publisher
    from schemas.errors import ConfigError

    with pytest.raises(ConfigError, match="CDFBRIDGE_KAFKA__PROPERTIES"):
        Publisher({"bootstrap.servers": "127.0.0.1:1", **properties}, "orders")
