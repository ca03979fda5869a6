"""verify's Kafka clients, made once per process and kept for its life: a look at a table
(its progress, its partitions' ends, its group's offsets) costs what was published since
the last look, not the topic's history, and no client is made per table or per round.

- one progress reader, which takes each watched table's progress partition from its start
  once, then reads on from where it stopped (read_committed);
- one admin client, for the groups' committed offsets;
- one offsets probe per isolation level, which never joins a group: read_committed gives a
  partition's last stable offset and tells whether anything readable is left after a
  group's offset; read_uncommitted gives its high watermark.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from schemas.errors import ServiceUnavailableError
from schemas.naming import progress_topic
from schemas.progress import Position
from services.group_positions import PartitionOffsets, offsets_of, partitions_of, position_probe
from services.kafka_errors import error_of
from services.partition_ends import partition_end
from services.progress_topic import (
    PROGRESS_PARTITION,
    READ_TIMEOUT_S,
    Progress,
    Reading,
    reader_config,
)
from services.service_errors import client_failure
from verify.look_together import Due, Look, offsets_together

TIMEOUT_S = 30.0
PROBE_GROUP = "cdfbridge-verify-probe"  # assign() only: never joined nor committed
BATCH = 10_000  # messages a poll returns at most
# A look takes what the reader has fetched by itself in the background (librdkafka fetches
# an assigned partition all along): it waits only for a topic newly taken, to its end.
# Missing a record published a moment ago is safe: the round is made at the version
# before, whose mark's offsets lie past it (verify/consumed.py).
WAIT_NEW_S = 0.1


class KafkaLooks:
    """The clients; `close` when the watch ends."""

    def __init__(self, kafka_config: Mapping[str, Any]) -> None:
        self.config, self.where = dict(kafka_config), str(kafka_config.get("bootstrap.servers"))
        self._reader = Consumer({**reader_config(self.config), "enable.partition.eof": True})
        self._readings: dict[str, Reading] = {}  # progress topic → what it says so far
        self._admin = AdminClient(self.config)
        self._probes = {i: position_probe(self.config, PROBE_GROUP, i) for i in _ISOLATIONS}

    def progress(self, topic: str) -> Position:
        """The progress of `topic` as published, read on from the last look."""
        name = progress_topic(topic)
        with self._failing(f"reading {name}"):
            if name not in self._readings:
                if not self._reader.list_topics(name, timeout=TIMEOUT_S).topics[name].partitions:
                    return Position()  # nothing published yet
                self._readings[name] = Reading(Progress(self.config, topic))
                start = TopicPartition(name, PROGRESS_PARTITION, OFFSET_BEGINNING)
                self._reader.incremental_assign([start])
                self._read(until_end=name)
            else:
                self._read()
        return self._readings[name].position()

    def ends(self, topic: str, committed: bool) -> dict[int, int]:
        """Each partition's last stable offset (committed) or high watermark."""
        probe = self._probes["read_committed" if committed else "read_uncommitted"]
        with self._failing(f"reading the offsets of {topic}"):
            return {p: partition_end(probe, topic, p) for p in partitions_of(probe, topic)}

    def positions(self, group: str, topic: str) -> list[PartitionOffsets]:
        """As services/offsets.py `positions`, from the kept clients."""
        probe = self._probes["read_committed"]
        with self._failing(f"reading the offsets of group {group}"):
            partitions = [TopicPartition(topic, p) for p in partitions_of(probe, topic)]
            asked = [ConsumerGroupTopicPartitions(group, partitions)]
            [future] = self._admin.list_consumer_group_offsets(asked).values()
            return offsets_of(probe, topic, future.result(timeout=TIMEOUT_S).topic_partitions)

    def together(self, due: Sequence[Due]) -> dict[Due, Look]:
        """One look for every (topic, group) due, each step asked for all of them at once
        (verify/look_together.py); none for a topic nothing was published to yet."""
        positions = {topic: self.progress(topic) for topic in {t for t, _ in due}}  # step 1
        published = [(t, g) for t, g in due if positions[t].version is not None]
        with self._failing("looking at the offsets of the tables due"):
            found = offsets_together(self._admin, self._probes["read_committed"], published)
        return {key: Look(positions[key[0]], *found[key]) for key in found}

    def close(self) -> None:
        for client in (self._reader, *self._probes.values()):
            client.close()

    def _read(self, until_end: str | None = None) -> None:
        """Take what the reader has; until `until_end`'s partition reports its end."""
        deadline = time.monotonic() + READ_TIMEOUT_S
        while True:
            messages = self._reader.consume(BATCH, WAIT_NEW_S if until_end else 0)
            for message in messages:
                reading = self._readings.get(message.topic() or "")
                if reading is None:
                    continue
                try:
                    ended = reading.take(message)
                except KafkaException:
                    self._forget(message.topic() or "")  # read again from its start
                    if message.topic() == until_end:
                        raise
                    continue
                if ended and message.topic() == until_end:
                    until_end = None
            if until_end is None and not messages:
                return
            if time.monotonic() > deadline:
                raise ServiceUnavailableError(f"reading {until_end} took over {READ_TIMEOUT_S} s")

    def _forget(self, name: str) -> None:
        self._readings.pop(name, None)
        self._reader.incremental_unassign([TopicPartition(name, PROGRESS_PARTITION)])

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """Kafka's failures inside, as ours (services/service_errors.py `client_failure`)."""
        try:
            yield
        except KafkaException as exc:
            raise client_failure(error_of(exc), self.where, doing) from exc


_ISOLATIONS: tuple[Literal["read_committed", "read_uncommitted"], ...] = (
    "read_committed",
    "read_uncommitted",
)
