"""Taking a table over from the producer its progress record names.

A process's tables share its transactional producers (producer/transactor.py), so a
producer of another transactional.id may hold a transaction open on a table this one is
about to follow: one of another deployment given the same table, or of the release before,
which had one transactional.id per table (`cdfbridge-<topic>`). Before it reads where to
resume, a producer:

1. reads the table's progress record, which names its owner (schemas/progress.py `owner`);
2. unless the owner is itself, fences the owner's transactional ids: init_transactions
   under each id aborts the open transaction and stops the owner at its next step
   (FencedError, exit 4). Its own zombies were fenced when its transactors started;
3. reads the progress again; if it names another owner meanwhile, goes back to 2.

A table that starts again in the same process (after a failure, or a resync) is not fenced:
its producers are the process's. Its read waits instead until it shows the process's last
commit for the table, which init_transactions used to wait for.

Two deployments given one table so take it from each other and stop in turn, as two
producers of one table always did.
"""

from __future__ import annotations

import time

from producer.transactor import Transactor
from schemas.progress import Position
from services.progress_topic import Progress
from services.service_errors import UnreachableError
from services.settings import KafkaConfig

BACKLOG = "-backlog"  # the suffix of a process's second transactional.id
MAX_ROUNDS = 3  # owners fenced in a row before giving up (another producer keeps taking it)
MARKERS_S = 30.0  # the longest a read waits to show this process's own last commit


def owner_ids(position: Position, topic: str) -> list[str]:
    """The transactional ids of the producer that wrote position."""
    if position.owner is None:
        return [f"cdfbridge-{topic}"]  # one per table, before records named their owner
    return [position.owner, position.owner + BACKLOG]


def take_over(
    progress: Progress,
    mine: list[str],
    kafka_config: KafkaConfig,
    committed: Position | None = None,
) -> Position:
    """The table's position once no other producer can write it (1. to 3.). committed: the
    last record this process committed for the table, if any: a read that does not show it
    yet (Kafka writes a commit's markers after the commit returns) is read again."""
    position = _read(progress, mine, committed)
    for _ in range(MAX_ROUNDS):
        theirs = [i for i in owner_ids(position, progress.data_topic) if i not in mine]
        if not theirs:
            return position
        for transactional_id in theirs:
            fence(kafka_config, transactional_id)
        again = progress.read()
        if again.owner == position.owner:
            return again
        position = again
    where = str(kafka_config.get("bootstrap.servers", "?"))
    why = f"{progress.data_topic} changed owner {MAX_ROUNDS} times while being taken over"
    raise UnreachableError("Kafka", where, MAX_ROUNDS, why)


def _read(progress: Progress, mine: list[str], committed: Position | None) -> Position:
    deadline = time.monotonic() + MARKERS_S
    while True:
        position = progress.read()
        if committed is None or position.owner not in mine or time.monotonic() > deadline:
            return position
        if (position.version, position.part) == (committed.version, committed.part):
            return position
        time.sleep(0.05)


def fence(kafka_config: KafkaConfig, transactional_id: str) -> None:
    """Stop the producers of transactional_id and abort their open transaction."""
    Transactor(kafka_config, transactional_id).start()
