"""Rebuild a table from its topic or from the lake, and leave the live group after it.

A rebuild never stops the readers of the table, and never swaps in a partial one:
0. refuse while the live group (consumer.group) has members: their old-generation rows
   would reach the new table;
1. create a shadow table `<table>__rebuild_<id>` from the latest value schema, its id the
   rebuild group's (replacing a leftover of the same group). Each rebuild has a shadow of
   its own: two consumer processes that rebuild one table at once (each with
   `rebuild = "auto"`) never fill, swap or drop each other's; each swaps in a whole table
   of the generation, and the last swap wins (its step 4 writes what arrived meanwhile);
2. fill it, from the topic or the lake (`Source`):
   - topic: a fresh group from the start of the topic's current generation
     (schemas/progress.py: where the producer's last resync began; else the beginning),
     refused when retention has deleted any of it (consumer/group/history.py);
   - lake: ClickHouse loads the Delta table at the last published version itself
     (consumer/rebuild/bootstrap.py), and the fresh group starts where the changes after it begin;
   then the group catches up; from the topic, until its last version is whole
   (consumer/rebuild/whole.py: a version published in parts is waited for, or refused when its
   producer has stopped);
3. mark the shadow with the generation it holds and the offsets its rows reach (the
   group's: consumer/tables/generation.py), durable with the rows before the swap, so a live group
   that restarts behind them jumps to them whatever step a kill stopped at; swap it in
   atomically: EXCHANGE TABLES (RENAME when there was no table), and refresh the
   `<table>_current` view for the new columns. On a cluster, the shards' local tables are
   swapped (ON CLUSTER, or server by server), and the Distributed table is made again
   over them with the new columns;
4. catch up once more with the same group, now into the swapped-in table, so changes that
   arrived during the swap are not left in the old table;
5. drop the old table (now the shadow: the live table before this rebuild's swap) and the
   shadow's view;
6. move the live group to where the rebuild's group ends, so that it goes on from there.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

from consumer.group.loop import Pipeline
from consumer.group.registry import Schemas
from consumer.rebuild import fill, whole
from consumer.rebuild.fill import Source
from consumer.settings import ConsumerSettings
from consumer.tables import table
from consumer.tables.generation import mark
from consumer.tables.placement import Placement, distributed_sql
from schemas.errors import ConfigError
from schemas.target import Target
from services import faults, offsets
from services.clickhouse_client import connect, existing_columns
from services.clickhouse_errors import sorted_errors

log = logging.getLogger(__name__)
SHADOW_SUFFIX = "__rebuild_"


@dataclass(frozen=True)
class Rebuilt:
    table: str
    group: str
    rows: int
    generation: int = 0
    source: str = "topic"
    version: int | None = None  # the Delta version loaded from the lake
    seconds: dict[str, float] = field(default_factory=dict)  # per step


def rebuild(
    settings: ConsumerSettings, group: str = "", source: Source = "auto", *, move_live: bool = True
) -> Rebuilt:
    """move_live False: the live group's first start (consumer/rebuild/first_read.py) takes the
    rebuild group's offsets itself; steps 0 and 6 are left out."""
    with sorted_errors(settings.clickhouse.url):
        return _rebuild(settings, group, source, move_live)


def bootstrap(settings: ConsumerSettings) -> Rebuilt:
    """A new subscriber's table from the lake: the group (consumer.group) must have no
    offsets yet, and follows the topic from the version loaded."""
    kafka, group = settings.kafka.client_config(), settings.consumer.group
    if any(p.committed >= 0 for p in offsets.positions(kafka, group, settings.consumer.topic)):
        raise ConfigError(
            f"group {group} already has offsets on {settings.consumer.topic}: bootstrap is for "
            "a new subscriber; to load its table again from the lake, cdfbridge-consumer "
            "rebuild --from-lake"
        )
    return rebuild(settings, "", "lake")


def _rebuild(settings: ConsumerSettings, group: str, source: Source, move_live: bool) -> Rebuilt:
    target = settings.target()
    live, kafka = settings.consumer.group, settings.kafka.client_config()
    topic = settings.consumer.topic
    group = group or builder_group(live, "rebuild")
    shadow = target.renamed(target.table + SHADOW_SUFFIX + shadow_id(group))
    if move_live and offsets.members(kafka, live):  # 0.
        raise ConfigError(
            f"group {live} is running: stop its consumers (of every topic it reads) first, "
            "then rebuild; the rebuild moves the group to where the new table ends"
        )
    client, took = connect(settings.clickhouse), dict[str, float]()
    placement = Placement.of(settings.clickhouse, client)
    _drop(placement, shadow)  # 1.
    try:
        with _timed(took, "fill"):
            filled = fill.fill(settings, shadow, group, source)  # 2.
        with _timed(took, "catch_up"):
            _catch_up(settings, shadow, group)
            if filled.source == "topic":  # the lake loads a version whole
                again = partial(_catch_up, settings, shadow, group)
                whole.wait_until_whole(kafka, topic, again)
    except BaseException:
        _drop(placement, shadow)  # nothing half-filled is left behind
        raise
    with _timed(took, "swap"):
        existed = existing_columns(client, target.local) is not None
        reached = offsets.committed(kafka, group, topic)
        mark(placement, shadow, filled.generation, reached)  # 3.
        live_local, shadow_local = target.local.name, shadow.local.name
        if existed:
            placement.ddl(lambda on: f"EXCHANGE TABLES {live_local} AND {shadow_local}{on}")
        else:
            placement.ddl(lambda on: f"RENAME TABLE {shadow_local} TO {live_local}{on}")
        if target.cluster:
            schemas = Schemas(settings.schema_registry.client_config())
            key = schemas.shard_by(topic, settings.consumer.primary_key)
            placement.ddl(partial(distributed_sql, target, key, replace=True))
        placement.ddl(partial(table.current_view_sql, target))
    faults.reach("rebuild.swapped")
    with _timed(took, "catch_up_after_swap"):
        _catch_up(settings, target, group)  # 4.
    with _timed(took, "drop_and_move"):
        _drop(placement, shadow)  # 5.
        if move_live:  # 6.
            offsets.copy(kafka, settings.consumer.topic, group, live)
    rows = int(str(client.command(f"SELECT count() FROM {target.name}")))  # noqa: S608 - quoted
    done = Rebuilt(target.name, group, rows, filled.generation, filled.source, filled.version, took)
    log.info(
        "rebuilt",
        extra={
            "table": done.table,
            "group": group,
            "rows": rows,
            "generation": done.generation,
            "source": done.source,
            "seconds": took,
        },
    )
    return done


def builder_group(live: str, purpose: str) -> str:
    """A new group for a rebuild or bootstrap: its time, and a part of its own, since two
    processes of one group may start one in the same second."""
    return f"{live}-{purpose}-{int(time.time())}-{uuid.uuid4().hex[:6]}"


def shadow_id(group: str) -> str:
    """A short name for the rebuild group, for its shadow table's name."""
    return hashlib.sha256(group.encode()).hexdigest()[:10]


@contextmanager
def _timed(took: dict[str, float], step: str) -> Iterator[None]:
    began = time.monotonic()
    yield
    took[step] = round(time.monotonic() - began, 2)


def _catch_up(settings: ConsumerSettings, into: Target, group: str) -> None:
    """Consume into `into` until the group is at the end; nothing to do (no consumer joins)
    when a read_committed reader finds nothing after the group's offsets."""
    kafka, topic = settings.kafka.client_config(), settings.consumer.topic
    found = offsets.positions(kafka, group, topic)
    if found and all(p.committed >= 0 and p.lag == 0 for p in found):
        return
    section = settings.consumer.model_copy(update={"table": into.table, "group": group})
    Pipeline(settings.model_copy(update={"consumer": section}), until_caught_up=True).run()


def _drop(placement: Placement, shadow: Target) -> None:
    placement.drop("VIEW", shadow.current_view)
    for each in {shadow, shadow.local}:  # on a cluster, the Distributed table and its shards'
        placement.drop("TABLE", each.name)
