"""A declared key that stops being unique: a later commit appends rows whose keys are there
already (an INSERT where a MERGE was meant). The producer publishes each commit as it is;
the as-of round names the keys (report, log and metric), and --repair leaves them alone
round after round instead of flipping the replica between the two rows."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumer_env
from tests.integration.test_many_tables import _wait_for
from tests.integration.test_verify_asof import consumed
from tests.integration.verify_support import running
from tests.producer_helpers import append, create_table, publish
from verify.asof_check import prepare
from verify.cli import main
from verify.rounds import once

pytestmark = [pytest.mark.integration, pytest.mark.spark]

APPENDED = [{"id": "03"}, {"id": "07"}, {"id": "11"}]


def appended_again(spark: Any, endpoints: Endpoints, root: Path) -> tuple[str, str]:
    """Version 1: 20 unique keys; 2: three of them appended again, with other values;
    3: an update of other keys. Published: (path, topic)."""
    path = str(root / "people")
    create_table(spark, path)
    append(spark, path, [(f"{i:02d}", f"p{i}", i) for i in range(20)])
    append(spark, path, [(key["id"], "again", 99) for key in APPENDED])
    spark.sql(f"UPDATE delta.`{path}` SET age = 0 WHERE id IN ('15', '16')")
    return path, publish(spark, endpoints, path, "id", until_version=3)


def test_a_key_appended_again_is_named_and_never_repaired(
    spark: Any,
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    clickhouse: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path, topic = appended_again(spark, endpoints, tmp_path)
    settings = consumed(endpoints, topic, ch_database, table=path)
    with caplog.at_level(logging.WARNING, logger="verify.asof_check"):
        [report] = once(settings)
    assert not report.equal and report.version == 3
    assert report.duplicate == 3 and _sorted(report.duplicate_keys) == APPENDED, report.render()
    assert (report.lost, report.extra, report.wrong) == (0, 0, 0), report.render()
    assert "key is not unique in the Delta table" in report.render()
    at_two = settings.model_copy(
        update={"verify": settings.verify.model_copy(update={"version": 2})}
    )
    [earlier] = once(at_two)  # a version given: compared there, not at the consumed one
    assert (earlier.version, earlier.duplicate) == (2, 3), earlier.render()
    logged, *_ = [r for r in caplog.records if r.getMessage().startswith("key not unique")]
    assert _sorted(logged.__dict__["sample"]) == APPENDED

    view = prepare(settings, clickhouse).target.current_view
    before = clickhouse.query(f"SELECT * FROM {view} ORDER BY id").result_rows
    consumer_env(monkeypatch, endpoints, ch_database)
    args = ["--table", path, "--topic", topic, "--group", settings.verify.group, "--repair"]
    for _ in range(3):
        assert main(args) == 1, "the duplicate keys stay, named"
        assert clickhouse.query(f"SELECT * FROM {view} ORDER BY id").result_rows == before


def test_the_watch_exports_duplicate_keys_as_their_own_state(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    path, topic = appended_again(spark, endpoints, tmp_path)
    watching = consumed(
        endpoints, topic, ch_database, table=path, interval_seconds=0.2, metrics_port=0
    )
    with running(watching) as watch:

        def rows(state: str) -> float | None:
            labels = {"table": watch.tables[0].name, "state": state}
            return watch.metrics.registry.get_sample_value("cdfbridge_verify_rows", labels)

        _wait_for(lambda: rows("duplicate_key") is not None, "a round")
        assert [rows(s) for s in ("duplicate_key", "lost", "extra", "wrong")] == [3, 0, 0, 0]


def _sorted(keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(keys, key=lambda key: key["id"])
