"""As-of comparisons while the pipeline runs: once (`--as-of`, `--repair`) or forever
(`--watch`), every table in turn.

Each round of a table:
1. its target, found once it exists (verify/asof_check.py `prepare`);
2. the version its consumer group has consumed whole (verify/consumed.py); none yet: the
   table waits for its next turn;
3. the round at that version, on the next slice of the key buckets; with --repair, what
   differs is repaired, and (once) compared again;
4. the metrics (verify/metrics.py) and, on a mismatch, the report with sample keys logged.
A table whose round fails, for whatever reason (its target dropped, its topic deleted,
ClickHouse or Kafka down), is logged with its name, counted
(`cdfbridge_verify_failures_total`), named by /health until a round of it passes, and tried
again at its next turn, its target looked up afresh; the others go on. An outage is waited
out: the watch never ends on one.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from schemas.errors import CdfBridgeError
from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from services.health import serve
from verify.asof import Scope
from verify.asof_check import Round, Table, prepare, run_round
from verify.consumed import Consumed
from verify.errors import NothingToCompareError
from verify.metrics import Metrics
from verify.report import Report
from verify.settings import VerifySettings

log = logging.getLogger(__name__)
LOOK_S = 1.0  # how often a --wait looks for the consumed version again


@dataclass
class Watched:
    """One table's state between rounds."""

    settings: VerifySettings
    consumed: Consumed
    table: Table | None = None
    due: float = 0.0  # monotonic time of its next round
    slice: int = 0
    prepared: bool = False  # its target was found once: missing later, it is a failure
    name: str = field(init=False)

    def __post_init__(self) -> None:
        s = self.settings
        self.name = f"{s.clickhouse.database}.{s.verify.target_table}"


def watched(settings: VerifySettings) -> list[Watched]:
    return [
        Watched(
            each, Consumed(each.kafka.client_config(), each.verify.topic_name, each.verify.group)
        )
        for each in settings.each()
    ]


def one_round(client: Any, w: Watched) -> Round | None:
    """Steps 1 to 3 for one table; None while its version is not consumed yet."""
    s = w.settings.verify
    if w.table is None:
        w.table = prepare(w.settings, client)
        w.prepared = True
    version = s.version if s.version is not None else w.consumed.version()
    if version is None:
        return None
    scope = Scope(w.table.keys, s.slices, w.slice)
    found = run_round(w.table, client, version, scope, mend=s.repair)
    if s.repair and not found.report.equal:
        log.warning("repaired %s as of version %d:\n%s", w.name, version, found.report.render())
        found = run_round(w.table, client, version, scope)
    w.slice = (w.slice + 1) % s.slices
    return found


def once(settings: VerifySettings) -> list[Report]:
    """--as-of and --repair: one round of every table, each waiting up to --wait for its
    target and its consumed version."""
    client, reports = connect(settings.clickhouse), []
    for w in watched(settings):
        deadline = time.monotonic() + w.settings.verify.wait_seconds
        while True:
            try:
                with sorted_errors(settings.clickhouse.url):
                    found = one_round(client, w)
            except NothingToCompareError:
                if time.monotonic() >= deadline:
                    raise
                found = None
            if found is not None:
                reports.append(found.report)
                break
            if time.monotonic() >= deadline:
                raise NothingToCompareError(
                    f"group {w.settings.verify.group} has not consumed the last version "
                    f"published to {w.settings.verify.topic_name} yet: wait longer (--wait), "
                    "or name the consumer's group (--group)"
                )
            time.sleep(LOOK_S)
    return reports


class Watch:
    """--watch: every table, in turn, forever (until `stop`)."""

    def __init__(self, settings: VerifySettings, stop: threading.Event | None = None) -> None:
        self.settings, self.stop = settings, stop or threading.Event()
        self.tables = watched(settings)
        self.metrics = Metrics()
        self._client: Any = None

    @property
    def client(self) -> Any:
        """The watch's ClickHouse client, made at its first use (in a round, whose failure
        it then is while ClickHouse cannot be reached)."""
        if self._client is None:
            self._client = connect(self.settings.clickhouse)
        return self._client

    def run(self) -> None:
        port = self.settings.verify.metrics_port
        server = serve(self.metrics, port) if port else None
        try:
            while not self.stop.is_set():
                w = min(self.tables, key=lambda t: t.due)
                wait = w.due - time.monotonic()
                if wait > 0:
                    self.metrics.ages()
                    self.stop.wait(min(wait, LOOK_S))
                    continue
                w.due = time.monotonic() + w.settings.verify.interval_seconds
                self._round(w)
        finally:
            if server is not None:
                server.shutdown()

    def _round(self, w: Watched) -> None:
        """Steps 1 to 4; a failure is logged and counted, and the table tried again later."""
        try:
            with sorted_errors(self.settings.clickhouse.url):
                found = one_round(self.client, w)
        except NothingToCompareError as exc:
            if not w.prepared:  # its target is not made yet: not a failure
                log.info("%s: nothing to compare yet (%s)", w.name, exc)
                return
            self._failed(w, exc)
            return
        except Exception as exc:  # noqa: BLE001 - one table's failure never ends the watch
            self._failed(w, exc)
            return
        if found is None:
            log.info("%s: waiting for group %s to consume", w.name, w.settings.verify.group)
            return
        self.metrics.record(w.name, found)
        report = found.report
        if not report.equal:
            log.warning("%s drifted:\n%s", w.name, report.render())
        log.info(
            "%s: version %d, %d rows in %.2f s, %d lost, %d extra, %d wrong, %d moving",
            *(w.name, report.version, found.rows, found.seconds),
            *(report.lost, report.extra, report.wrong, report.moving),
        )

    def _failed(self, w: Watched, exc: Exception) -> None:
        """Log and count the failure; the table's target is looked up again next time."""
        ours = isinstance(exc, CdfBridgeError)
        log.warning(
            "%s: the round failed: %s",
            *(w.name, exc),
            extra={"table": w.name},
            exc_info=None if ours else exc,
        )
        self.metrics.failed(w.name, f"{type(exc).__name__}: {exc}"[:300])
        w.table = None
