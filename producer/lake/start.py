"""Where a table's follow starts: a new generation when a resync was asked for, else after
the last version published, else where the table's settings say."""

from __future__ import annotations

from producer import metrics
from producer.errors import TableRecreatedError, TopicClaimedError, TopicRecreatedError
from producer.publish.publish import Publisher
from producer.publish.topics import DataTopic
from producer.read.source import DeltaSource
from producer.settings import SourceSection
from schemas.progress import LOST_TOPIC_ID, Identity, Position


def check_identity(position: Position, identity: Identity, topic: str) -> None:
    """The topic's progress must name this table (by its Delta id) or none yet: another
    table's id at another place is another table's topic (TopicClaimedError, exit 2); at
    this place, the table was created again (TableRecreatedError, exit 1), unless a resync
    was asked for, which starts the topic over with it."""
    claimed = position.identity
    if claimed is None or claimed.table_id == identity.table_id:
        return
    if claimed.table != identity.table:
        raise TopicClaimedError(topic, identity.table, f"{claimed.table} (id {claimed.table_id})")
    if not position.resync_pending:
        why = f"its Delta id is {identity.table_id}; the topic's progress names {claimed.table_id}"
        raise TableRecreatedError(identity.table, topic, why)


def check_topic(position: Position, found: DataTopic, table: str, topic: str) -> None:
    """The data topic must hold what its progress records count: be the topic they were
    written beside (by its Kafka id) or, for records older than ids, not be missing when
    they say versions were published. One deleted and created again lacks those changes
    (TopicRecreatedError, exit 1), unless a resync was asked for, which starts a new
    generation in it with a snapshot."""
    recorded, last = position.topic_id, position.version
    if position.resync_pending or recorded == found.id:
        return
    counted = f"its progress counts versions up to {'none whole' if last is None else last}"
    if recorded == LOST_TOPIC_ID:
        why = f"an earlier start found it missing, though {counted}"
    elif recorded is not None:
        why = f"its Kafka id is {found.id}; its progress was written beside topic id {recorded}"
    elif found.created and (last is not None or position.part is not None):
        why = f"it was missing at this start, though {counted}"
    else:
        return
    raise TopicRecreatedError(table, topic, why)


def starting_point(
    config: SourceSection, source: DeltaSource, publisher: Publisher, position: Position
) -> tuple[int, int | None]:
    """(first version to read, version to snapshot first or None), and the generation the
    publisher's progress records name: a resync asked for first, then progress, then the
    table's settings."""
    if position.resync_pending:
        return _new_generation(publisher, source, position.requested)
    publisher.progress.generation = position.generation
    if position.part is not None:  # a version published in parts: its rest comes first
        return position.part.last + 1, None
    last_published = position.version
    if last_published is not None:
        return last_published + 1, None
    if config.snapshot:
        version = (
            source.latest_version() if config.starting_version is None else config.starting_version
        )
        return version + 1, version
    if config.starting_version is not None:
        return config.starting_version, None
    if config.starting_timestamp is not None:
        return source.version_at(config.starting_timestamp), None
    return 0, None


def _new_generation(publisher: Publisher, source: DeltaSource, number: int) -> tuple[int, int]:
    """Steps 2 and 3 of a resync (producer/resync/resync.py): the generation starts at the topic's
    end offsets, with a snapshot at the latest version; (first version to read, snapshot)."""
    generation = publisher.progress.generation_here(number)
    publisher.progress.generation = generation
    version = source.latest_version()
    metrics.event(
        "resync",
        table=source.table,
        topic=publisher.topic,
        generation=number,
        snapshot_version=version,
        generation_start=generation.start,
    )
    return version + 1, version
