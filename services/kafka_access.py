"""Kafka's refusals that no retry gets past, found before a command starts: the SASL
credentials (librdkafka's _AUTHENTICATION) or the brokers' certificate (_SSL).

librdkafka reports them only to a client's error callback and keeps retrying, so a command
would otherwise wait out its retries and exit as if Kafka were down. Checked with one
metadata request when the settings use TLS or SASL; Kafka that does not answer is left to the
command itself (its retries and its error)."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, Producer

from schemas.errors import ConfigError
from services.kafka_errors import build
from services.settings import KafkaSettings

SASL_CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
TLS_CODES = frozenset({KafkaError._SSL})
# Seconds of metadata requests before leaving an unanswered Kafka to the command.
PATIENCE_S = 5
SETTING = "CDFBRIDGE_KAFKA__"


class KafkaCredentialsError(ConfigError):
    def __init__(self, where: str, detail: str) -> None:
        super().__init__(
            f"Kafka at {where} refused the SASL credentials ({detail}); check "
            f"{SETTING}SASL_USERNAME, {SETTING}SASL_PASSWORD and {SETTING}SASL_MECHANISM"
        )


class KafkaTlsError(ConfigError):
    def __init__(self, where: str, detail: str) -> None:
        super().__init__(
            f"the TLS connection to Kafka at {where} failed ({detail}); check that "
            f"{SETTING}SSL_CA_LOCATION names the CA that signed the brokers' certificates and "
            "that the bootstrap address is a name the certificates hold; "
            f"{SETTING}TLS_VERIFY=false turns the check off, never for production"
        )


def check_access(kafka: KafkaSettings) -> None:
    """Raise KafkaCredentialsError or KafkaTlsError if Kafka refuses this client."""
    if kafka.security_protocol == "PLAINTEXT":
        return
    errors: list[KafkaError] = []
    # log_level 0: the error raised below says it all, once.
    probe = build(Producer, {**kafka.client_config(), "error_cb": errors.append, "log_level": 0})
    try:
        for _ in range(PATIENCE_S):
            try:
                probe.list_topics(timeout=1)
                return
            except KafkaException:
                probe.poll(0)  # serves the error callback
            for error in errors:
                if error.code() in SASL_CODES:
                    raise KafkaCredentialsError(kafka.bootstrap_servers, error.str())
                if error.code() in TLS_CODES:
                    raise KafkaTlsError(kafka.bootstrap_servers, error.str())
    finally:
        probe.flush(0)
