"""Taking a table over: no two producers publish one table at once.

A process's tables share its transactional producers (producer/publish/transactor.py), so no
transactional.id is the table's alone. A producer of another id may hold a transaction open
on a table this one is about to follow: another deployment given the same table, or the
release before, which had one transactional.id per table (`cdfbridge-<topic>`). Before it
reads where to resume, a producer:

1. reads the table's progress topic: its version record names the producer that wrote it,
   and its last claim the producer that claimed it last (schemas/progress.py);
2. fences those producers, unless they are itself or fenced already: init_transactions
   under each of their ids aborts their open transaction and stops them at their next
   step (FencedError, exit 4); then reads again, and goes back to 2;
3. claims the table: a record of its own key naming itself, in a transaction;
4. reads until its claim shows. A record that another producer wrote between its last
   read and its claim (one claiming the table at the same time) is fenced as in 2, and
   it goes back to 3; else it resumes where this read says.

Two producers that start on one table together so fence each other, or one of them the
other: at most one goes on, and it resumes after anything the other committed. Its own
zombies were fenced when its producers started.

A table that starts again in the same process (after a failure, or a resync) reads its
progress until it shows the process's own last commit for the table, which
init_transactions used to wait for: Kafka writes a commit's markers after it returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from producer.publish.transactor import Transactor
from schemas.progress import Position
from services.progress_topic import Owners, Progress
from services.service_errors import UnreachableError
from services.settings import KafkaConfig

BACKLOG = "-backlog"  # the suffix of a process's second transactional.id
MAX_ROUNDS = 5  # fences in a row before giving up (other producers keep claiming it)
MARKERS_S = 30.0  # the longest a read waits to show this process's own last commit


def ids_of(owner: str | None, topic: str) -> list[str]:
    """The transactional ids of the producer that a record names (None: none named)."""
    if owner is None:
        return [f"cdfbridge-{topic}"]  # one per table, before records named their owner
    return [owner, owner + BACKLOG]


def take_over(
    progress: Progress,
    mine: list[str],
    kafka_config: KafkaConfig,
    claim: Callable[[], None],
    committed: Position | None = None,
) -> Position:
    """The table's position once no other producer can write it (1. to 4.). claim: makes
    this producer's claim (3.); committed: the last record this process committed for the
    table, if any."""
    topic, fenced = progress.data_topic, set(mine)
    position, owners = _first_read(progress, mine, committed)  # 1.
    for _ in range(MAX_ROUNDS):
        theirs = {*writer_ids(position, owners, topic), *claimant_ids(owners, topic)} - fenced
        if theirs:  # 2.
            _fence(kafka_config, theirs, fenced)
            position, owners = progress.read_owners(owners.end)
            continue
        claim()  # 3.
        after, seen = _until_claimed(progress, owners.end, mine[0])  # 4.
        others = {i for writer in seen.writers for i in ids_of(writer, topic)} - fenced
        if not others:
            return after
        _fence(kafka_config, others, fenced)
        position, owners = progress.read_owners(seen.end)
    where = str(kafka_config.get("bootstrap.servers", "?"))
    why = f"other producers kept claiming {topic} ({MAX_ROUNDS} fenced in a row)"
    raise UnreachableError("Kafka", where, MAX_ROUNDS, why)


def writer_ids(position: Position, owners: Owners, topic: str) -> list[str]:
    """The ids of the producer that wrote the table's version record, if any."""
    return ids_of(position.owner, topic) if owners.recorded else []


def claimant_ids(owners: Owners, topic: str) -> list[str]:
    """The ids of the producer that made the table's last claim, if any."""
    return [] if owners.claimant is None else ids_of(owners.claimant, topic)


def _first_read(
    progress: Progress, mine: list[str], committed: Position | None
) -> tuple[Position, Owners]:
    """The progress, once it shows committed if this process wrote it (MARKERS_S at most)."""

    def shows(position: Position, _: Owners) -> bool:
        if committed is None or position.owner not in mine:
            return True
        return (position.version, position.part) == (committed.version, committed.part)

    position, owners, _ = _read_until(progress, 0, shows)
    return position, owners


def _until_claimed(progress: Progress, since: int, me: str) -> tuple[Position, Owners]:
    """The progress once the claim `me` made after offset since shows."""
    position, owners, shown = _read_until(progress, since, lambda _, o: me in o.writers)
    if not shown:
        why = f"its claim on {progress.data_topic} did not show in {MARKERS_S:.0f} s"
        raise UnreachableError("Kafka", progress.topic, 1, why)
    return position, owners


def _read_until(
    progress: Progress, since: int, done: Callable[[Position, Owners], bool]
) -> tuple[Position, Owners, bool]:
    """Read the progress until done() (True), or for MARKERS_S (False)."""
    deadline = time.monotonic() + MARKERS_S
    while True:
        position, owners = progress.read_owners(since)
        if done(position, owners):
            return position, owners, True
        if time.monotonic() > deadline:
            return position, owners, False
        time.sleep(0.05)


def _fence(kafka_config: KafkaConfig, ids: set[str], fenced: set[str]) -> None:
    """Stop the producers of ids and abort their open transactions."""
    for transactional_id in sorted(ids):
        Transactor(kafka_config, transactional_id).start()
        fenced.add(transactional_id)
