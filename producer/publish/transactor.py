"""One transactional producer that many tables' chunks share (KIP-447's model: a producer per
process, not per table). Each transaction holds the chunks handed to it meanwhile, every
chunk with its own progress record:

1. a table hands its chunk (its messages' batches and its progress record) and waits;
2. the transactor's thread gathers chunks until none comes for QUIET_S (GATHER_S at most) or
   every table has handed one, then queues them all and their progress records in one
   transaction and commits;
3. a chunk Kafka refuses (a change too large, a topic the broker refuses) is taken out: the
   transaction is aborted and run again at once without it, and its table gets the refusal;
   any other failure reaches every chunk of the transaction, and a fatal one (fenced) every
   chunk handed after it too.

A chunk's messages and its progress record commit together or not at all, so exactly once
holds per table. A kill leaves the open transaction to the next producer with this
transactional.id, or to one that takes a table over (producer/publish/takeover.py): either one's
init_transactions aborts it.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from producer.gather import gather
from producer.publish.handed import Chunk
from producer.publish.kafka_errors import error_of, fatal, kafka_failure
from producer.publish.refusals import ChunksRefused, Refused
from producer.publish.sends import produce, producer_config, send
from services.kafka_errors import build, passing
from services.progress_topic import PROGRESS_PARTITION
from services.retry import retrying
from services.service_errors import UnreachableError
from services.settings import MAX_MESSAGE_BYTES, KafkaConfig

START_ATTEMPTS = 5  # tries to initialise transactions while Kafka does not answer
GATHER_S = 0.2  # the longest a transaction waits for more chunks once one is handed
QUIET_S = 0.02  # ... and the longest it waits for the next one
# What an abort's purged messages report: no refusal of theirs.
PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})


class Transactor:
    """One transactional.id's producer, and the thread that runs its transactions."""

    def __init__(
        self,
        kafka_config: KafkaConfig,
        transactional_id: str,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        tables: int = 1,
    ) -> None:
        """tables: how many tables hand chunks; each waits for its chunk's commit before it
        hands the next, so once every one has handed, no more can come."""
        self.transactional_id = transactional_id
        self.tables = tables
        self.bootstrap = str(kafka_config.get("bootstrap.servers", "?"))
        self._refused: dict[str, Message] = {}  # topic: the first message the broker refused
        config = producer_config(kafka_config, transactional_id, max_message_bytes)
        self._producer = build(Producer, {**config, "on_delivery": self._delivery_failed})
        self._handed: deque[Chunk] = deque()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._started = threading.Lock()
        self._ready = self._closed = False
        self._dead: KafkaError | None = None  # fatal: nothing more is sent

    def start(self) -> None:
        """init_transactions once (fencing older producers of this transactional.id and
        aborting their open transaction), retried while Kafka does not answer."""
        with self._started:
            if self._ready:
                return
            for attempt in retrying("Kafka", max_backoff_s=30, attempts=START_ATTEMPTS):
                with attempt:
                    self._init_transactions(attempt.retry_state.attempt_number)
            self._ready = True

    def _init_transactions(self, attempt: int) -> None:
        try:
            self._producer.init_transactions(30)
        except KafkaException as exc:
            error = error_of(exc)
            if fatal(error) or not passing(error):
                doing = "initialising its transactions"
                raise kafka_failure(error, self.bootstrap, doing, self.transactional_id) from exc
            raise UnreachableError("Kafka", self.bootstrap, attempt, str(exc)) from exc

    def hand(self, chunk: Chunk) -> int:
        """Publish chunk in the next transaction; its rows sent, or Refused."""
        return self.submit(chunk).result()

    def submit(self, chunk: Chunk) -> Future[int]:
        """hand(chunk), without waiting: its rows sent, or Refused, once committed."""
        with self._changed:
            self._handed.append(chunk)
            self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"transactions-{self.transactional_id}", daemon=True
                )
                self._thread.start()
        return chunk.rows

    def close(self) -> None:
        """Serve the chunks handed, then end the thread and wait for what is in flight."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(60)
        try:
            self._producer.flush(10)
        except KafkaException:
            return

    def _run(self) -> None:
        while chunks := self._take():
            self._commit(chunks)

    def _take(self) -> list[Chunk]:
        """1. The chunks handed, once none came for QUIET_S (GATHER_S at most), or once
        every table has handed one."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self._handed) or self._closed)
            if not self._handed:
                self._thread = None
                return []
            gather(self._changed, self._handed.__len__, self._all_handed, QUIET_S, GATHER_S)
            taken = list(self._handed)
            self._handed.clear()
        return taken

    def _all_handed(self) -> bool:
        """Every table has handed a chunk (one table: the first does): none can come."""
        return len(self._handed) >= self.tables

    def _commit(self, chunks: list[Chunk]) -> None:
        """2. and 3.: one transaction, run again without the chunks Kafka refused."""
        while chunks:
            if self._dead is not None:
                for chunk in chunks:
                    chunk.rows.set_exception(Refused(self._dead))
                return
            try:
                rows = self._transaction(chunks)
            except ChunksRefused as out:
                for chunk, refused in out.refused.items():
                    chunk.rows.set_exception(refused)
                chunks = [chunk for chunk in chunks if chunk not in out.refused]
                continue
            except KafkaException as exc:
                for chunk in chunks:
                    chunk.rows.set_exception(Refused(error_of(exc)))
                return
            except BaseException as exc:  # noqa: BLE001 - each table raises it as its own
                for chunk in chunks:
                    chunk.rows.set_exception(exc)
                return
            for chunk, count in zip(chunks, rows, strict=True):
                chunk.rows.set_result(count)
            return

    def _transaction(self, chunks: list[Chunk]) -> list[int]:
        producer = self._producer
        self._refused.clear()
        try:
            producer.begin_transaction()
            rows = [send(producer, chunk) for chunk in chunks]
            for chunk in chunks:
                produce(producer, *chunk.progress, partition=PROGRESS_PARTITION)
            producer.commit_transaction(60)
            return rows
        except KafkaException as exc:
            error = error_of(exc)
            if fatal(error):
                self._dead = error
                raise
            self._abort()
            producer.poll(0)  # serves the delivery reports naming the refused messages
            refused = self._refusals(chunks, error)
            if refused:
                raise ChunksRefused(refused) from exc
            raise
        except BaseException:
            self._abort()  # never leave part of a chunk to a later transaction
            raise

    def _refusals(self, chunks: list[Chunk], error: KafkaError) -> dict[Chunk, Refused]:
        """The chunks whose topics the broker refused a message of; a lone chunk gets any
        refusal, even one no delivery report names."""
        out: dict[Chunk, Refused] = {}
        for chunk in chunks:
            found = self._refused.get(chunk.topic) or self._refused.get(chunk.progress[0])
            if found is not None:
                value = found.value() or b""
                out[chunk] = Refused(found.error() or error, found.key(), None, len(value))
        if not out and len(chunks) == 1 and not passing(error):
            out[chunks[0]] = Refused(error)
        return out

    def _delivery_failed(self, error: KafkaError | None, message: Message) -> None:
        if error is None or error.code() in PURGED or passing(error):
            return
        self._refused.setdefault(message.topic() or "", message)

    def _abort(self) -> None:
        """Abort the open transaction if the handle still can; if it cannot, the transaction
        is never committed: the next producer's init_transactions aborts it."""
        try:
            self._producer.abort_transaction(30)
        except KafkaException:
            return
