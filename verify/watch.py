"""As-of comparisons while the pipeline runs: once (`--as-of`, `--repair`) or forever
(`--watch`), every table in turn.

Each round of a table:
1. its target, found once it exists (verify/asof_check.py `prepare`);
2. the version the group that fills it has consumed whole (verify/consumed.py; for a
   Kafka-engine table, the group its Kafka table reads with now: verify/filling.py);
   none yet: the table waits for its next turn. The tables due together share one look
   at Kafka (verify/look_together.py), taken again once it is LOOK_FRESH_S old;
3. the round at that version, on the next slice of the key buckets; with --repair, what
   differs is repaired, and (once) compared again;
4. the metrics (verify/metrics.py) and, on a mismatch, the report with sample keys logged;
   at every look, also how far the replica and the proof are behind Delta
   (verify/behind.py), so that a table whose consumed version stops while Delta moves is
   reported, and an idle one is not.
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
from typing import Any

from schemas.errors import CdfBridgeError
from services.clickhouse_client import connect
from services.clickhouse_errors import sorted_errors
from services.health import serve
from verify.errors import NothingToCompareError
from verify.look_together import Due, Look
from verify.metrics import Metrics
from verify.rounds import LOOK_S, Watched, close, one_round, watched
from verify.settings import VerifySettings

log = logging.getLogger(__name__)
# A look shared by the tables due is taken again for the rest once it is this old: a round
# is made at the version the look found consumed, which later rounds would find older.
LOOK_FRESH_S = 5.0
# A table due within this share of its interval (LOOK_FRESH_S at most) has its round now,
# with the tables due: turns spread over the interval gather into shared looks.
GATHER_SHARE = 0.1


class Watch:
    """--watch: every table, in turn, forever (until `stop`)."""

    def __init__(self, settings: VerifySettings, stop: threading.Event | None = None) -> None:
        self.settings, self.stop = settings, stop or threading.Event()
        self.tables = watched(settings)
        self.metrics = Metrics(settings.verify.stale_seconds)
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
                now = time.monotonic()
                due = sorted((t for t in self.tables if _gathered(t, now)), key=lambda t: t.due)
                if not any(t.due <= now for t in due):
                    self.metrics.ages()
                    wait = min(t.due for t in self.tables) - now
                    self.stop.wait(min(wait, LOOK_S))
                    continue
                self._rounds(due)
        finally:
            close(self.tables)
            if server is not None:
                server.shutdown()

    def _rounds(self, due: list[Watched]) -> None:
        """A round of each table due, in turn, sharing looks at Kafka."""
        looked: dict[Due, Look] = {}
        taken = float("-inf")
        for index, w in enumerate(due):
            if self.stop.is_set():
                return
            if time.monotonic() - taken > LOOK_FRESH_S:
                looked, taken = self._look(due[index:]), time.monotonic()
            w.due = time.monotonic() + w.settings.verify.interval_seconds
            self._round(w, looked)

    def _look(self, due: list[Watched]) -> dict[Due, Look]:
        """One look for the tables due whose rounds find the consumed version; where it
        fails, each table looks for itself and its round fails with its own error."""
        wanted = [
            (w.consumed.topic, w.consumed.group) for w in due if w.settings.verify.version is None
        ]
        if not wanted:
            return {}
        looks = due[0].consumed.looks
        try:
            return looks.together(wanted)
        except Exception as exc:  # noqa: BLE001 - each round looks again, and says why
            log.info("one look at %d tables failed (%s): each looks for itself", len(wanted), exc)
            return {}

    def _round(self, w: Watched, looked: dict[Due, Look]) -> None:
        """Steps 1 to 4; a failure is logged and counted, and the table tried again later."""
        try:
            with sorted_errors(self.settings.clickhouse.url):
                found = one_round(self.client, w, looked)
        except NothingToCompareError as exc:
            if not w.prepared:  # its target is not made yet: not a failure
                log.info("%s: nothing to compare yet (%s)", w.name, exc)
                return
            self._failed(w, exc)
            return
        except Exception as exc:  # noqa: BLE001 - one table's failure never ends the watch
            self._failed(w, exc)
            return
        if found is not None:
            self.metrics.record(w.name, found)
        self._behind(w)
        if found is None:
            log.info("%s: waiting for group %s to consume", w.name, w.consumed.group)
            return
        report = found.report
        if not report.equal:
            log.warning("%s drifted:\n%s", w.name, report.render())
        log.info(
            "%s: version %d, %d rows in %.2f s, %d lost, %d extra, %d wrong, %d moving",
            *(w.name, report.version, found.rows, found.seconds),
            *(report.lost, report.extra, report.wrong, report.moving),
        )

    def _behind(self, w: Watched) -> None:
        """How far the replica (its group's consumed version) and the proof (the last
        round's version) are behind Delta; unknown until the group's version is."""
        consumed, proved = w.consumed.last, self.metrics.proved.get(w.name)
        if consumed is None:
            return
        try:
            unconsumed = w.behind.first_after(self.client, consumed)
            unproved = unconsumed
            if proved is not None and proved != consumed:
                unproved = w.behind.first_after(self.client, proved)
        except Exception as exc:  # noqa: BLE001 - as a round's failure
            self._failed(w, exc)
            return
        self.metrics.behind(w.name, unconsumed)
        if proved is not None:  # no round yet: no proof to age
            self.metrics.unproved(w.name, unproved)

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


def _gathered(w: Watched, now: float) -> bool:
    """w is due, or due soon enough to share the look of the tables that are."""
    return w.due <= now + min(LOOK_FRESH_S, GATHER_SHARE * w.settings.verify.interval_seconds)
