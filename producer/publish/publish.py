"""A table's side of publishing: each chunk handed, with its progress record, to a
transaction of its process's transactional producers (producer/publish/transactor.py), and what
Kafka refuses named for the table.

Exactly once for read_committed readers: a chunk's changes and the progress record naming
its last version commit together or not at all. On start, the process's producers fence
older ones of their transactional.ids, the producer the table's progress names is fenced
when it is another (producer/publish/takeover.py), and only then is the progress read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa
from confluent_kafka import KafkaError

from producer.errors import MessageTooLargeError, client_limit, topic_limit
from producer.publish.handed import Chunk
from producer.publish.kafka_errors import fatal, kafka_failure
from producer.publish.refusals import Refused
from producer.publish.takeover import BACKLOG, take_over
from producer.publish.transactor import Transactor
from schemas.errors import CdfBridgeError
from schemas.progress import LOST_TOPIC_ID, Part, Position
from services.progress_topic import Progress
from services.settings import MAX_MESSAGE_BYTES, KafkaConfig


class Transactions:
    """A process's transactional producers: one for the chunks at the tables' heads, one for
    backlogs and snapshots (`<id>-backlog`), so a long backfill's transactions never hold
    up the others' fresh commits."""

    def __init__(
        self,
        kafka_config: KafkaConfig,
        transactional_id: str,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        tables: int = 1,
    ) -> None:
        """tables: how many tables hand chunks (each one at a time)."""
        self.kafka_config = kafka_config
        self.owner = transactional_id  # what the progress records name
        self.committed: dict[str, Position] = {}  # topic: the last progress record committed
        self.ids = [transactional_id, transactional_id + BACKLOG]
        self.head = Transactor(kafka_config, self.ids[0], max_message_bytes, tables)
        self.backlog = Transactor(kafka_config, self.ids[1], max_message_bytes, tables)

    def start(self) -> None:
        """Fence older producers of both ids (once; later calls return at once)."""
        self.head.start()
        self.backlog.start()

    def close(self) -> None:
        self.head.close()
        self.backlog.close()


class Publisher:
    """One table's topic and progress record. transactions: its process's, shared with the
    other tables (None: its own, named `cdfbridge-<topic>`)."""

    def __init__(
        self,
        kafka_config: KafkaConfig,
        topic: str,
        tombstones: bool = False,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        transactions: Transactions | None = None,
    ) -> None:
        self.topic = topic
        self.tombstones = tombstones
        self.max_message_bytes = max_message_bytes
        self.describe_key: Callable[[bytes], str] = bytes.hex  # how errors name a key
        self.bootstrap = str(kafka_config.get("bootstrap.servers", "?"))
        self._own = transactions is None
        self.transactions = transactions or Transactions(
            kafka_config, f"cdfbridge-{topic}", max_message_bytes
        )
        self.progress = Progress(kafka_config, topic)
        self.progress.owner = self.transactions.owner

    def start(self) -> Position:
        """Fence older producers and the table's recorded owner, then return what the
        progress topic says: the last version fully published, the generation, and a
        resync asked for."""
        transactions = self.transactions
        transactions.start()
        committed = transactions.committed.get(self.topic)
        kafka_config = transactions.kafka_config
        return take_over(self.progress, transactions.ids, kafka_config, self._claim, committed)

    def _claim(self) -> None:
        """Claim the table (producer/publish/takeover.py): a record of its own, in a transaction."""
        self._record(self.progress.claim(), f"claiming {self.topic}")

    def _record(self, record: tuple[bytes, bytes], doing: str) -> None:
        """A progress topic's record (value, key) alone, in a transaction."""
        head = self.transactions.head
        try:
            head.hand(Chunk(self.topic, [], (self.progress.topic, *record)))
        except Refused as refused:
            error = refused.error
            raise kafka_failure(error, self.bootstrap, doing, head.transactional_id) from None

    def keep_lost(self, position: Position) -> None:
        """Record that the data topic lacks the history position counts, when position's
        record does not name the topic's id (one written before records did): the next
        start then stops as this one, though it finds the topic there (producer/lake/start.py)."""
        if position.topic_id is not None:
            return
        progress = self.progress
        progress.generation, progress.identity = position.generation, position.identity
        progress.hashed, progress.value_schema = position.hashed or (), position.value_schema
        progress.topic_id = LOST_TOPIC_ID
        record = progress.record(position.version, position.part)
        self._record(record, f"recording that {self.topic} lost its history")

    def publish(
        self,
        batches: Iterable[pa.RecordBatch],
        last_version: int | None,
        stop: Callable[[], bool],
        part: Part | None = None,
        behind: bool = False,
    ) -> int | None:
        """Send batches and the progress record (last_version whole, and part of the next
        one if `part`) in one transaction; rows sent, None if stop() turned true before
        they were handed. behind: a backlog's or snapshot's chunk, not one at the head."""
        if stop():
            return None
        listed = list(batches)  # a reader that stops mid-chunk raises here: nothing is sent
        if stop():
            return None
        record = (self.progress.topic, *self.progress.record(last_version, part))
        chunk = Chunk(self.topic, listed, record, self.tombstones)
        transactor = self.transactions.backlog if behind else self.transactions.head
        try:
            sent = transactor.hand(chunk)
        except Refused as refused:
            upto = part.last if part is not None else last_version
            raise self.named(refused, upto, transactor.transactional_id) from refused
        self.transactions.committed[self.topic] = Position(last_version, part=part)
        return sent

    def named(self, refused: Refused, upto: int | None, transactional_id: str) -> CdfBridgeError:
        """Kafka's answer to a chunk up to version upto as our error: a change too large
        named by its key where known, else as any Kafka failure (producer/publish/kafka_errors.py)."""
        error = refused.error
        if error.code() != KafkaError.MSG_SIZE_TOO_LARGE or fatal(error):
            doing = f"publishing the chunk up to version {upto} to {self.topic}"
            return kafka_failure(error, self.bootstrap, doing, transactional_id)
        if refused.version is not None:  # refused in produce(): the client's own limit
            key = self.describe_key(refused.key or b"")
            limit = client_limit(self.max_message_bytes)
            return MessageTooLargeError(self.topic, key, refused.version, refused.size, limit)
        key = "unknown: its delivery report did not arrive"
        if refused.key is not None:
            key = self.describe_key(refused.key)
        limit = topic_limit(self.topic, self.max_message_bytes)
        return MessageTooLargeError(self.topic, key, f"up to {upto}", refused.size, limit)

    def close(self) -> None:
        """Close the table's own transactions (a process's shared ones are closed by it)."""
        if self._own:
            self.transactions.close()
