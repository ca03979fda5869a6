"""Rebuild a table from its topic, and move a group's offsets.

A rebuild never stops the readers of the table:
1. create a shadow table `<table>__rebuild` from the latest value schema (replacing a
   leftover one);
2. fill it with a fresh consumer group, from the start of the topic's current generation
   (schemas/progress.py: where the producer's last resync began; else the earliest
   offset), until it has caught up;
3. mark the shadow with the generation it holds (consumer/generation.py), swap it in
   atomically: EXCHANGE TABLES (RENAME when there was no table), and refresh the
   `<table>_current` view for the new columns;
4. catch up once more with the same group, now into the swapped-in table, so changes that
   arrived during the swap are not left in the old table;
5. drop the old table (now the shadow) and the shadow's view.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from clickhouse_connect.driver.client import Client
from confluent_kafka import TopicPartition

from consumer import offsets, table
from consumer.generation import mark
from consumer.loop import Pipeline
from consumer.settings import ConsumerSettings
from schemas.clickhouse_client import connect
from schemas.clickhouse_errors import sorted_errors
from schemas.progress import Generation, Progress
from schemas.target import Target, existing_columns

log = logging.getLogger(__name__)
SHADOW_SUFFIX = "__rebuild"


@dataclass(frozen=True)
class Rebuilt:
    table: str
    group: str
    rows: int
    generation: int = 0


def rebuild(settings: ConsumerSettings, group: str = "") -> Rebuilt:
    with sorted_errors(settings.clickhouse.url):
        return _rebuild(settings, group)


def _rebuild(settings: ConsumerSettings, group: str) -> Rebuilt:
    target = Target(settings.clickhouse.database, settings.consumer.target_table)
    shadow = target.renamed(target.table + SHADOW_SUFFIX)
    group = group or f"{settings.consumer.group}-rebuild-{int(time.time())}"
    client = connect(settings.clickhouse)
    _drop(client, shadow)  # 1.
    generation = _from_generation(settings, group)  # 2.
    _catch_up(settings, shadow, group)
    existed = existing_columns(client, target) is not None
    mark(client, shadow, generation.number)  # 3.
    if existed:
        client.command(f"EXCHANGE TABLES {target.name} AND {shadow.name}")
    else:
        client.command(f"RENAME TABLE {shadow.name} TO {target.name}")
    client.command(table.current_view_sql(target))
    _catch_up(settings, target, group)  # 4.
    _drop(client, shadow)  # 5.
    rows = int(str(client.command(f"SELECT count() FROM {target.name}")))  # noqa: S608 - quoted
    done = Rebuilt(target.name, group, rows, generation.number)
    log.info(
        "rebuilt",
        extra={"table": done.table, "group": group, "rows": rows, "generation": done.generation},
    )
    return done


def _from_generation(settings: ConsumerSettings, group: str) -> Generation:
    """Start group at the topic's current generation, when a resync began one; a group
    without offsets starts at the earliest."""
    kafka, topic = settings.kafka.client_config(), settings.consumer.topic
    generation = Progress(kafka, topic).read().generation
    if generation.number:
        starts = [TopicPartition(topic, p, offset) for p, offset in generation.start.items()]
        offsets.reset(kafka, group, starts)
    return generation


def _catch_up(settings: ConsumerSettings, into: Target, group: str) -> None:
    section = settings.consumer.model_copy(update={"table": into.table, "group": group})
    Pipeline(settings.model_copy(update={"consumer": section}), until_caught_up=True).run()


def _drop(client: Client, shadow: Target) -> None:
    client.command(f"DROP VIEW IF EXISTS {shadow.current_view} SYNC")
    client.command(f"DROP TABLE IF EXISTS {shadow.name} SYNC")
