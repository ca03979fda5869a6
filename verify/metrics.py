"""The watcher's Prometheus metrics, one set per table (label `table`: the ClickHouse table,
`database.table`), served with /health by services/health.py. Dashboards and alert rules
(docs/operations.md, monitoring/) rely on these names."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge

from verify.asof_check import Round

PREFIX = "cdfbridge_verify_"
STATES = ("lost", "extra", "wrong", "moving", "duplicate_key")


class Metrics:
    def __init__(self, stale_seconds: float = 900.0) -> None:
        self.registry = r = CollectorRegistry()
        self.problems_by_table: dict[str, str] = {}
        self.rows = Gauge(
            f"{PREFIX}rows",
            "Keys found in the last round, by state: lost (in Delta, not in ClickHouse), "
            "extra, wrong (values differ), moving (changed after the version compared), "
            "duplicate_key (held by more than one row in Delta)",
            ["table", "state"],
            registry=r,
        )
        self.version = Gauge(
            f"{PREFIX}version",
            "The Delta version the last round compared at",
            ["table"],
            registry=r,
        )
        self.age = Gauge(
            f"{PREFIX}age_seconds",
            "How old the proof is: seconds since the first Delta commit after the version "
            "the last round compared at; 0 while that version is the table's latest",
            ["table"],
            registry=r,
        )
        self.lag = Gauge(
            f"{PREFIX}lag_seconds",
            "How far the replica is behind Delta: seconds since the first Delta commit the "
            "group that fills it has not consumed whole; 0 when caught up",
            ["table"],
            registry=r,
        )
        self.round_seconds = Gauge(
            f"{PREFIX}round_seconds", "Duration of the last round", ["table"], registry=r
        )
        self.round_rows = Gauge(
            f"{PREFIX}round_rows",
            "Rows of both sides the last round compared",
            ["table"],
            registry=r,
        )
        self.rounds = Counter(
            f"{PREFIX}rounds", "Rounds made (and recorded here)", ["table"], registry=r
        )
        self.failures = Counter(
            f"{PREFIX}failures",
            "Rounds that could not be made (the log says why)",
            ["table"],
            registry=r,
        )
        # table -> commit time (s) of the first commit not consumed / not proved; None: none
        self._unconsumed: dict[str, float | None] = {}
        self._unproved: dict[str, float | None] = {}
        self.proved: dict[str, int] = {}  # table -> the version its last round compared at
        self.stale_seconds = stale_seconds

    def record(self, table: str, found: Round) -> None:
        report = found.report
        counts = (report.lost, report.extra, report.wrong, report.moving, report.duplicate)
        for state, count in zip(STATES, counts, strict=True):
            self.rows.labels(table, state).set(count)
        self.version.labels(table).set(report.version)
        self.rounds.labels(table).inc()
        self.round_seconds.labels(table).set(found.seconds)
        self.round_rows.labels(table).set(found.rows)
        self.proved[table] = report.version
        self.problems_by_table.pop(table, None)

    def failed(self, table: str, why: str) -> None:
        self.failures.labels(table).inc()
        self.problems_by_table[table] = why

    def behind(self, table: str, unconsumed_ms: int | None) -> None:
        """The commit time (ms) of the first Delta commit the table's group has not
        consumed whole (None: there is none)."""
        self._unconsumed[table] = None if unconsumed_ms is None else unconsumed_ms / 1000
        self.ages()

    def unproved(self, table: str, unproved_ms: int | None) -> None:
        """The commit time (ms) of the first Delta commit the table's last round did not
        cover (None: there is none)."""
        self._unproved[table] = None if unproved_ms is None else unproved_ms / 1000
        self.ages()

    def ages(self) -> None:
        """Move every table's lag and proof age on to now."""
        now = time.time()
        for gauge, since in ((self.lag, self._unconsumed), (self.age, self._unproved)):
            for table, first in since.items():
                gauge.labels(table).set(0.0 if first is None else max(0.0, now - first))

    def problems(self) -> list[str]:
        """What /health answers 503 with: the tables whose last round could not be made,
        and those whose replica is behind Delta by more than stale_seconds."""
        now, found = time.time(), dict(self.problems_by_table)
        for table, first in self._unconsumed.items():
            if first is not None and now - first > self.stale_seconds and table not in found:
                found[table] = (
                    f"behind Delta for {now - first:.0f} s: a commit its group has not "
                    "consumed whole is that old (cdfbridge_verify_lag_seconds)"
                )
        return [f"{table}: {why}" for table, why in sorted(found.items())]
