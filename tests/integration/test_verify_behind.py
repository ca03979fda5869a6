"""How far behind Delta a replica is, as the watcher says it: 0 while the table has no
commit after the consumed version, however old its last one; once a commit waits that the
group has not consumed, the age of that commit, and /health names the table past
verify.stale_seconds."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.endpoints import Endpoints
from tests.integration.test_many_tables import _wait_for
from tests.integration.test_verify_asof import consumed, people
from tests.integration.verify_support import running

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_a_commit_the_group_has_not_consumed_makes_the_table_behind(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    path, topic = people(spark, endpoints, tmp_path)  # versions 0-4, published and consumed
    settings = consumed(
        endpoints,
        topic,
        ch_database,
        table=path,
        interval_seconds=0.2,
        metrics_port=0,
        stale_seconds=2.0,
    )
    with running(settings) as watch:
        found = watch.metrics.registry.get_sample_value
        table = {"table": watch.tables[0].name}
        _wait_for(lambda: found("cdfbridge_verify_lag_seconds", table) is not None, "a look")
        time.sleep(3)  # older than stale_seconds, and idle: not behind
        assert found("cdfbridge_verify_lag_seconds", table) == 0
        assert found("cdfbridge_verify_age_seconds", table) == 0
        assert watch.metrics.problems() == []

        spark.sql(f"UPDATE delta.`{path}` SET age = 1 WHERE id = '1'")  # 5: not published
        _wait_for(lambda: (found("cdfbridge_verify_lag_seconds", table) or 0) > 0, "behind")
        _wait_for(lambda: bool(watch.metrics.problems()), "named by /health", 30)
        [problem] = watch.metrics.problems()
        assert problem.startswith(f"{table['table']}: behind Delta for ")
        assert (found("cdfbridge_verify_age_seconds", table) or 0) > 0
        assert found("cdfbridge_verify_version", table) == 4
