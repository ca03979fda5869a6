"""The consumer's writers share one pool of ClickHouse connections sized for them
(services/clickhouse_client.py `connect(pool_size=...)`). With clickhouse-connect's
default of 8 a host, more requests at once open connections that urllib3 throws away after
one request, each with a warning, and the next request connects again: what a consumer of
hundreds of topics logged hundreds of times (docs/performance.md, the 500-table run)."""

import logging
import threading
from typing import Any

import pytest

from services.clickhouse_client import connect
from services.settings import ClickHouseSettings
from tests.endpoints import Endpoints

pytestmark = pytest.mark.integration

AT_ONCE = 12  # requests at once: more than clickhouse-connect's default pool holds


@pytest.mark.parametrize(
    ("pool_size", "discarded"), [(None, True), (AT_ONCE, False)], ids=["default", "sized"]
)
def test_requests_at_once_keep_their_connections_in_a_pool_sized_for_them(
    endpoints: Endpoints, caplog: pytest.LogCaptureFixture, pool_size: int | None, discarded: bool
) -> None:
    settings = ClickHouseSettings(url=endpoints.clickhouse)
    clients = [connect(settings, pool_size) for _ in range(AT_ONCE)]
    together = threading.Barrier(AT_ONCE)
    answers: list[int] = []

    def ask(client: Any) -> None:
        together.wait(10)
        answers.append(client.query("SELECT sleep(0.3) + 1").result_rows[0][0])

    caplog.set_level(logging.WARNING, logger="urllib3.connectionpool")
    threads = [threading.Thread(target=ask, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert answers == [1] * AT_ONCE
    full = [r for r in caplog.records if str(r.msg).startswith("Connection pool is full")]
    assert bool(full) is discarded
