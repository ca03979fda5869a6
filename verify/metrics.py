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
    def __init__(self) -> None:
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
            "Time since the commit of the last version compared: how old the proof is",
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
        self._committed: dict[str, float] = {}  # table -> commit time of its version, s

    def record(self, table: str, found: Round) -> None:
        report = found.report
        counts = (report.lost, report.extra, report.wrong, report.moving, report.duplicate)
        for state, count in zip(STATES, counts, strict=True):
            self.rows.labels(table, state).set(count)
        self.version.labels(table).set(report.version)
        self.rounds.labels(table).inc()
        self.round_seconds.labels(table).set(found.seconds)
        self.round_rows.labels(table).set(found.rows)
        if found.committed_ms is not None:
            self._committed[table] = found.committed_ms / 1000
        self.problems_by_table.pop(table, None)
        self.ages()

    def failed(self, table: str, why: str) -> None:
        self.failures.labels(table).inc()
        self.problems_by_table[table] = why

    def ages(self) -> None:
        """Move every table's age on to now."""
        now = time.time()
        for table, committed in self._committed.items():
            self.age.labels(table).set(max(0.0, now - committed))

    def problems(self) -> list[str]:
        """What /health answers 503 with: the tables whose last round could not be made."""
        return [f"{table}: {why}" for table, why in sorted(self.problems_by_table.items())]
