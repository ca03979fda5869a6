"""Bootstrap a table from the lake: ClickHouse reads the Delta table's state at version N
itself, at its own speed, and the topic is followed from where the changes after N begin.

The steps, in this order (consumer/rebuild/steps.py runs them into its shadow table):
1. read the data topic's last stable offsets: a read_committed reader's end, where the
   first transaction still open begins (`start_point`);
2. then, once every transaction that wrote to the progress topic before has ended there
   (consumer/rebuild/boundary.py: Kafka writes a transaction's commit markers partition by
   partition), read the progress record: N is the last version fully published, or the
   version being published in parts. Every transaction that ended before step 1 published
   versions up to N, and every later one begins past those offsets, so following the topic
   from them misses no change after N (changes up to N read again lose to, or equal, the
   snapshot's rows: schemas/changes.py);
3. INSERT … SELECT the table at version N into the target, `_change_type` 'snapshot' at
   version N, excluded columns left out (they are not in the target), hashed columns
   hashed as the producer hashes them (schemas/column_policy.py); refused where a NULL
   struct may have been read as a struct of NULLs (services/lake_structs.py);
4. the caller sets its group's offsets to step 1's and follows the topic.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import DatabaseError

from consumer.rebuild import boundary
from schemas.changes import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION, GENERATION, SNAPSHOT
from schemas.clickhouse import literal, quote
from schemas.errors import TerminalError
from schemas.progress import Generation
from schemas.target import Target
from services import lake_structs
from services.clickhouse_client import existing_columns, insert_settings
from services.lake import LAKE_CODES, LakeTable, LakeUnreadableError, committed_at, lake_column
from services.partition_ends import stable_offsets
from services.progress_topic import Progress

log = logging.getLogger(__name__)


class NothingPublishedError(TerminalError):
    """The producer has published no version yet: there is nothing to start from."""


@dataclass(frozen=True)
class StartPoint:
    version: int  # the table's state loaded from the lake
    offsets: dict[int, int]  # per partition: where following the topic begins
    generation: Generation
    location: str | None  # the table, as the progress record names it
    hashed: tuple[str, ...] | None  # as the progress record names them


def start_point(kafka_config: Mapping[str, Any], topic: str) -> StartPoint:
    """Steps 1 and 2."""
    offsets = stable_offsets(kafka_config, topic)
    boundary.settle_progress(kafka_config, topic)
    position = Progress(dict(kafka_config), topic).read()
    version = position.part.last if position.part is not None else position.version
    if version is None:
        raise NothingPublishedError(
            f"topic {topic} has no version published yet: run the consumer, which reads the "
            "topic from its beginning"
        )
    location = position.identity.table if position.identity is not None else None
    return StartPoint(version, offsets, position.generation, location, position.hashed)


def load(client: Client, into: Target, lake: LakeTable, point: StartPoint, hashed: set[str]) -> int:
    """Step 3; returns the rows loaded."""
    try:
        return _load(client, into, lake, point, hashed)
    except DatabaseError as exc:
        if exc.code not in LAKE_CODES:
            raise
        raise LakeUnreadableError(
            f"ClickHouse cannot read the Delta table {lake.location} at version "
            f"{point.version} ({exc.name}, code {exc.code}: {str(exc)[:400]}). Check that "
            "ClickHouse reaches it (consumer.lake_location, [storage]), or replay the topic "
            "instead: cdfbridge-consumer rebuild --from-topic"
        ) from exc


def _load(
    client: Client, into: Target, lake: LakeTable, point: StartPoint, hashed: set[str]
) -> int:
    settings = {
        "delta_lake_snapshot_version": point.version,
        "insert_deduplicate": 0,
        # The reader's own types, converted by the insert: asked for the table's
        # Nullable(Tuple), ClickHouse's Parquet reader refuses a struct column.
        "use_structure_from_insertion_table_in_table_functions": 0,
        **insert_settings(into),
    }
    parameters, asked = lake.query_parameters(point.version), time.monotonic()
    described = client.query(
        f"DESCRIBE TABLE {lake.table_sql()}", parameters=parameters, settings=settings
    ).result_rows
    in_lake = {row[0]: row[1] for row in described}
    target = existing_columns(client, into) or {}
    metadata = {
        CHANGE_TYPE: literal(SNAPSHOT),
        COMMIT_VERSION: str(point.version),
        COMMIT_TIMESTAMP: committed_at(client, lake, point.version),
        GENERATION: str(point.generation.number),  # a table made from a schema that has it
    }
    chosen = {
        name: metadata.get(name) or lake_column(name, in_lake[name], name in hashed)
        for name in target
        if name in metadata or name in in_lake
    }
    columns = ", ".join(map(quote, chosen))
    select = ", ".join(f"{expression} AS {quote(name)}" for name, expression in chosen.items())
    began = time.monotonic()
    client.command(
        f"INSERT INTO {into.name} ({columns}) SELECT {select} FROM {lake.table_sql()}",  # noqa: S608 - quoted
        parameters=parameters,
        settings=settings,
    )
    inserted = time.monotonic()
    lake_structs.check(client, into, target, lake.location)
    rows = int(str(client.command(f"SELECT count() FROM {into.name}")))  # noqa: S608 - quoted
    log.info(
        "loaded from the lake",
        extra={
            "table": into.name,
            "version": point.version,
            "rows": rows,
            "seconds": round(inserted - began, 2),
            "before_s": round(began - asked, 2),  # DESCRIBE and the commit's time
            "after_s": round(time.monotonic() - inserted, 2),  # the struct check, the count
        },
    )
    return rows
