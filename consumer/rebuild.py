"""Rebuild a table from its topic, and move a group's offsets.

A rebuild never stops the readers of the table:
1. create a shadow table `<table>__rebuild` from the latest value schema (replacing a
   leftover one);
2. fill it from the earliest offset with a fresh consumer group, until it has caught up;
3. swap it in atomically: EXCHANGE TABLES (RENAME when there was no table), and refresh
   the `<table>_current` view for the new columns;
4. catch up once more with the same group, now into the swapped-in table, so changes that
   arrived during the swap are not left in the old table;
5. drop the old table (now the shadow) and the shadow's view.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from clickhouse_connect.driver.client import Client

from consumer import table
from consumer.loop import Pipeline
from consumer.settings import ConsumerSettings
from schemas.clickhouse_client import connect
from schemas.clickhouse_errors import sorted_errors
from schemas.target import Target, existing_columns

log = logging.getLogger(__name__)
SHADOW_SUFFIX = "__rebuild"


@dataclass(frozen=True)
class Rebuilt:
    table: str
    group: str
    rows: int


def rebuild(settings: ConsumerSettings, group: str = "") -> Rebuilt:
    with sorted_errors(settings.clickhouse.url):
        return _rebuild(settings, group)


def _rebuild(settings: ConsumerSettings, group: str) -> Rebuilt:
    target = Target(settings.clickhouse.database, settings.consumer.target_table)
    shadow = target.renamed(target.table + SHADOW_SUFFIX)
    group = group or f"{settings.consumer.group}-rebuild-{int(time.time())}"
    client = connect(settings.clickhouse)
    _drop(client, shadow)  # 1.
    _catch_up(settings, shadow, group)  # 2.
    existed = existing_columns(client, target) is not None
    if existed:  # 3.
        client.command(f"EXCHANGE TABLES {target.name} AND {shadow.name}")
    else:
        client.command(f"RENAME TABLE {shadow.name} TO {target.name}")
    client.command(table.current_view_sql(target))
    _catch_up(settings, target, group)  # 4.
    _drop(client, shadow)  # 5.
    rows = int(str(client.command(f"SELECT count() FROM {target.name}")))  # noqa: S608 - quoted
    log.info("rebuilt", extra={"table": target.name, "group": group, "rows": rows})
    return Rebuilt(target.name, group, rows)


def _catch_up(settings: ConsumerSettings, into: Target, group: str) -> None:
    section = settings.consumer.model_copy(update={"table": into.table, "group": group})
    Pipeline(settings.model_copy(update={"consumer": section}), until_caught_up=True).run()


def _drop(client: Client, shadow: Target) -> None:
    client.command(f"DROP VIEW IF EXISTS {shadow.current_view} SYNC")
    client.command(f"DROP TABLE IF EXISTS {shadow.name} SYNC")
