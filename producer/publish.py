"""Kafka side of the producer: one transaction per chunk, progress in the same transaction.

Exactly once for read_committed readers: a chunk's changes and the progress record naming
its last version commit together or not at all. On start, init_transactions fences any
older producer with the same transactional.id and aborts its open transaction, and only
then is the progress read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from producer.encode import IS_DELETE, KEY, ORDER, VALUE
from producer.errors import MessageTooLargeError, client_limit, topic_limit
from producer.kafka_errors import error_of, fatal, kafka_failure
from schemas.errors import CdfBridgeError
from schemas.naming import DELETE_HEADER
from schemas.progress import Part, Position
from services.kafka_errors import build, passing
from services.progress_topic import Progress
from services.retry import retrying
from services.service_errors import UnreachableError
from services.settings import MAX_MESSAGE_BYTES, KafkaConfig

TRANSACTION_TIMEOUT_MS = 600_000
START_ATTEMPTS = 5  # tries to initialise transactions while Kafka does not answer


class Publisher:
    def __init__(
        self,
        kafka_config: KafkaConfig,
        topic: str,
        tombstones: bool = False,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.topic = topic
        self.tombstones = tombstones
        self.max_message_bytes = max_message_bytes
        self.describe_key: Callable[[bytes], str] = bytes.hex  # how errors name a key
        self._refused: Message | None = None  # the first message the broker refused
        self.transactional_id = f"cdfbridge-{topic}"
        self.bootstrap = str(kafka_config.get("bootstrap.servers", "?"))
        self.progress = Progress(kafka_config, topic)
        self._producer = build(
            Producer,
            {
                # Throughput defaults; CDFBRIDGE_KAFKA__PROPERTIES may tune them.
                "linger.ms": 20,
                "batch.size": 1_000_000,
                "queue.buffering.max.messages": 1_000_000,
                "compression.type": "lz4",
                **kafka_config,
                # What exactly-once and per-key ordering rest on: never overridden.
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
                "enable.idempotence": True,
                "partitioner": "murmur2_random",  # the Java clients' partitioner: same key, same partition
                # A larger change is refused in produce(), where its key and version are known.
                "message.max.bytes": max_message_bytes,
                # Failures only: no Python call per delivered message.
                "delivery.report.only.error": True,
                "on_delivery": self._delivery_failed,
            },
        )

    def start(self) -> Position:
        """Fence older producers, then return what the progress topic says: the last version
        fully published, the generation, and a resync asked for."""
        for attempt in retrying("Kafka", max_backoff_s=30, attempts=START_ATTEMPTS):
            with attempt:
                self._init_transactions(attempt.retry_state.attempt_number)
        return self.progress.read()

    def _init_transactions(self, attempt: int) -> None:
        """init_transactions once: a failure a later attempt can get past raises
        UnreachableError (transient), any other our terminal error."""
        doing = "initialising its transactions"
        try:
            self._producer.init_transactions(30)
        except KafkaException as exc:
            self._raise_if_fatal(exc, doing)
            if not passing(error_of(exc)):
                raise self._failure(exc, doing) from exc
            raise UnreachableError("Kafka", self.bootstrap, attempt, str(exc)) from exc

    def publish(
        self,
        batches: Iterable[pa.RecordBatch],
        last_version: int | None,
        stop: Callable[[], bool],
        part: Part | None = None,
    ) -> int | None:
        """Send batches and the progress record (last_version whole, and part of the next
        one if `part`) in one transaction; rows sent, None if aborted.

        stop() is asked between batches: when it turns true the transaction is aborted.
        """
        producer = self._producer
        self._refused = None
        try:
            producer.begin_transaction()
            rows = 0
            for batch in batches:
                if stop():
                    producer.abort_transaction(30)
                    return None
                rows += self._send(batch)
            self._produce(self.progress.topic, *self.progress.record(last_version, part))
            producer.commit_transaction(60)
            return rows
        except KafkaException as exc:
            upto = part.last if part is not None else last_version
            doing = f"publishing the chunk up to version {upto} to {self.topic}"
            self._raise_if_fatal(exc, doing)
            if error_of(exc).txn_requires_abort():
                self._abort()
            self._producer.poll(0)  # serves the delivery report naming the refused message
            refused = self._broker_refused(upto, error_of(exc))
            raise refused or self._failure(exc, doing) from exc
        except BaseException:
            # Never leave part of a chunk to be committed by a later transaction.
            self._abort()
            raise

    def _send(self, batch: pa.RecordBatch) -> int:
        keys = batch.column(KEY).to_pylist()
        values = batch.column(VALUE).to_pylist()
        deletes = batch.column(IS_DELETE).to_pylist() if self.tombstones else None
        produce, topic = self._producer.produce, self.topic
        for i, (key, value) in enumerate(zip(keys, values, strict=True)):
            try:  # the common case inline: a call less per message
                produce(topic, value, key)
            except BufferError:
                self._producer.poll(0.05)
                self._produce(topic, value, key)
            except KafkaException as exc:
                if error_of(exc).code() != KafkaError.MSG_SIZE_TOO_LARGE:
                    raise
                version = str(batch.column(ORDER)[i].as_py() // 2)
                raise self._too_large(
                    key, version, len(value), client_limit(self.max_message_bytes)
                ) from exc
            if deletes is not None and deletes[i]:
                # After the delete, for compaction; it carries the delete, which compaction
                # removes first, for readers behind the log cleaner (schemas/README.md).
                self._produce(topic, None, key, {DELETE_HEADER: value})
        self._producer.poll(0)
        return len(keys)

    def _produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes,
        headers: dict[str, str | bytes | None] | None = None,
    ) -> None:
        """One message, retried alone while librdkafka's local queue is full: a retry never
        sends again what was already queued."""
        while True:
            try:
                self._producer.produce(topic, value, key, headers=headers)
                return
            except BufferError:
                self._producer.poll(0.05)  # let librdkafka drain the queue

    def _delivery_failed(self, error: KafkaError | None, message: Message) -> None:
        # Only a size refusal: an abort's purged messages report errors of their own.
        too_large = error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE
        if too_large and self._refused is None:
            self._refused = message

    def _broker_refused(
        self, last_version: int | None, raised: KafkaError
    ) -> MessageTooLargeError | None:
        """The message the broker refused as too large, named (by its key once its delivery
        report is in, else as one of the chunk's), or None."""
        refused = self._refused
        error = refused.error() if refused is not None else raised
        if error is None or error.code() != KafkaError.MSG_SIZE_TOO_LARGE:
            return None
        limit = topic_limit(self.topic, self.max_message_bytes)
        version = f"up to {last_version}"
        if refused is None:
            key = "unknown: its delivery report did not arrive"
            return MessageTooLargeError(self.topic, key, version, None, limit)
        size = len(refused.value() or b"")
        return self._too_large(refused.key() or b"", version, size, limit)

    def _too_large(self, key: bytes, version: str, size: int, limit: str) -> MessageTooLargeError:
        return MessageTooLargeError(self.topic, self.describe_key(key), version, size, limit)

    def _raise_if_fatal(self, exc: KafkaException, doing: str) -> None:
        """Fenced by a newer producer → FencedError; any other fatal error → KafkaFatalError.
        Decided by Kafka's error code and fatal flag (producer/kafka_errors.py)."""
        if fatal(error_of(exc)):
            raise self._failure(exc, doing) from exc

    def _failure(self, exc: KafkaException, doing: str) -> CdfBridgeError:
        return kafka_failure(error_of(exc), self.bootstrap, doing, self.transactional_id)

    def _abort(self) -> None:
        """Abort the open transaction if the handle still can; if it cannot, the transaction
        is never committed: the next producer's init_transactions aborts it."""
        try:
            self._producer.abort_transaction(30)
        except KafkaException:
            return

    def close(self) -> None:
        """Wait for what is in flight; a handle that failed has nothing left to send."""
        try:
            self._producer.flush(10)
        except KafkaException:
            return
