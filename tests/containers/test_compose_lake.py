"""Several tables through one producer and one consumer container, from one config file:
docker-compose.yml with stack/docker/compose.lake.yml, as the README runs it."""

from __future__ import annotations

from functools import partial

import pytest

from tests.containers.compose_support import LOCAL, LONG_RUNNING, running, wait_until

pytestmark = pytest.mark.containers

LAKE = (*LOCAL, "stack/docker/compose.lake.yml")


def test_three_tables_reach_clickhouse_equal_through_one_producer_and_one_consumer(
    images: None,
) -> None:
    import clickhouse_connect

    with running(LAKE, commits=15) as project:
        for service in LONG_RUNNING:
            wait_until(partial(project.healthy, service), f"{service} healthy")
        wait_until(partial(project.exited, "verify"), "verify finished", 900)
        log = project.compose("logs", "--no-color", "--no-log-prefix", "verify")
        assert project.state("verify")["ExitCode"] == 0, log
        for table in ("orders", "customers", "events"):
            assert f"/data/{table}" in log, log
        client = clickhouse_connect.get_client(dsn=project.endpoints.clickhouse)
        tables = {row[0] for row in client.query("SHOW TABLES").result_rows}
        assert {"orders", "customers", "events_by_id"} <= tables, tables
        # One producer container and one consumer container served all three.
        assert project.compose("ps", "-q", "producer").count("\n") == 1
