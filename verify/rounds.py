"""One table's rounds, and its state between them (`Watched`): once for `--as-of` and
`--repair` (`once`), or in turn under `--watch` (verify/watch.py numbers a round's steps)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from verify.asof import Scope
from verify.asof_check import Round, Table, prepare, run_round
from verify.behind import Behind
from verify.consumed import Consumed
from verify.errors import NothingToCompareError
from verify.filling import filling_group
from verify.kafka_looks import KafkaLooks
from verify.look_together import Due, Look
from verify.report import Report
from verify.settings import VerifySettings

log = logging.getLogger(__name__)
LOOK_S = 1.0  # how often a --wait looks for the consumed version again


@dataclass
class Watched:
    """One table's state between rounds."""

    settings: VerifySettings
    consumed: Consumed
    behind: Behind
    table: Table | None = None
    due: float = 0.0  # monotonic time of its next round
    slice: int = 0
    prepared: bool = False  # its target was found once: missing later, it is a failure
    name: str = field(init=False)

    def __post_init__(self) -> None:
        s = self.settings
        self.name = f"{s.clickhouse.database}.{s.verify.target_table}"


def watched(settings: VerifySettings) -> list[Watched]:
    """Each table of settings, all looked at through one set of Kafka clients."""
    looks = KafkaLooks(settings.kafka.client_config())
    return [
        Watched(each, Consumed(looks, each.verify.topic_name, each.verify.group), Behind(each))
        for each in settings.each()
    ]


def close(tables: list[Watched]) -> None:
    """Close the tables' Kafka clients."""
    for looks in {id(w.consumed.looks): w.consumed.looks for w in tables}.values():
        looks.close()


def one_round(client: Any, w: Watched, looked: Mapping[Due, Look] | None = None) -> Round | None:
    """Steps 1 to 3 for one table; None while its version is not consumed yet. looked: a
    look at every table due (verify/look_together.py); the table looks for itself where it
    holds none for its topic and group."""
    s = w.settings.verify
    if w.table is None:
        w.table = prepare(w.settings, client)
        w.prepared = True
    if s.version is None:
        url = w.settings.clickhouse.url
        group = filling_group(client, w.table.target, s.group, url)
        if group != w.consumed.group:
            log.info("%s: following group %s, which fills the table", w.name, group)
            w.consumed.follow(group)
    version, generation = s.version, 0
    if version is not None:  # --version: of the table at the path now
        if w.table.generations:
            generation = w.consumed.looks.progress(s.topic_name).generation.number
    else:
        look = (looked or {}).get((w.consumed.topic, w.consumed.group))
        version, generation = w.consumed.version(look), w.consumed.generation
        if generation != w.consumed.newest_generation:
            return None  # the table at the path is a newer generation's; V's is gone
        if version is None:
            return None
    generation = generation if w.table.generations else 0
    scope = Scope(w.table.keys, s.slices, w.slice, generation)
    found = run_round(w.table, client, version, scope, mend=s.repair)
    if s.repair and not found.report.equal:
        log.warning("repaired %s as of version %d:\n%s", w.name, version, found.report.render())
        found = run_round(w.table, client, version, scope)
    w.slice = (w.slice + 1) % s.slices
    return found


def once(settings: VerifySettings) -> list[Report]:
    """--as-of and --repair: one round of every table, each waiting up to --wait for its
    target and its consumed version."""
    client, tables = connect(settings.clickhouse), watched(settings)
    try:
        return [_one(client, w) for w in tables]
    finally:
        close(tables)


def _one(client: Any, w: Watched) -> Report:
    """One round of w, looked for until --wait has passed."""
    deadline = time.monotonic() + w.settings.verify.wait_seconds
    while True:
        try:
            with sorted_errors(w.settings.clickhouse.url):
                found = one_round(client, w)
        except NothingToCompareError:
            if time.monotonic() >= deadline:
                raise
            found = None
        if found is not None:
            return found.report
        if time.monotonic() >= deadline:
            raise NothingToCompareError(
                f"group {w.consumed.group} has not consumed the last version published to "
                f"{w.settings.verify.topic_name} yet: wait longer (--wait), or name the "
                "consumer's group (--group)"
            )
        time.sleep(LOOK_S)
