"""A lake of thirty tables through one producer process and one consumer process: every table
ends equal to its Delta table, and the broker sees one consumer-group member and at most two
transactional producers (the tables at their heads, and backlogs) where a client per table
would be thirty."""

import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from consumer.process import Consumers
from producer.run import run
from services import offsets
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import consumers_of
from tests.integration.test_consumer_recovery import wait_for
from tests.integration.test_many_tables import producer_settings
from tests.kafka_tools import transactions
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]
TABLES = 30


def test_thirty_tables_end_equal_through_one_member_and_at_most_two_producers(
    spark: Any, endpoints: Endpoints, kafka_admin: Any, tmp_path: Path, ch_database: str
) -> None:
    lake = {}
    for seed in range(TABLES):
        path, generator = str(tmp_path / f"t{seed}"), Generator(str(tmp_path / f"t{seed}"), seed)
        lake[unique(f"lake{seed}")] = (path, max(generator.commit(op, 20) for op in OPS))
    before = transactions(endpoints.kafka)

    entries = [
        {"table": path, "primary_key": "id", "topic": topic, "until_version": last}
        for topic, (path, last) in lake.items()
    ]
    run(producer_settings(endpoints, entries), spark=spark)
    started = {tid: pid for tid, pid in transactions(endpoints.kafka).items() if tid not in before}

    group, topics = unique("lake-group"), list(lake)
    with consumers_of(endpoints, topics, ch_database, group) as consumers:
        waited = partial(_caught_up, endpoints, kafka_admin, group, topics, consumers)
        wait_for(waited, "every topic read", 180)
        described = kafka_admin.describe_consumer_groups([group])[group].result()

    assert consumers.failures == []
    members = {member.member_id for member in described.members}
    assert len(started) <= 2 and len(set(started.values())) <= 2, started
    assert len(members) == 1, members
    for topic, (path, _) in lake.items():
        report = verify(
            VerifySettings(
                kafka={"bootstrap_servers": endpoints.kafka},
                clickhouse={"url": endpoints.clickhouse, "database": ch_database},
                verify={"table": path, "topic": topic, "clickhouse_table": topic},
            )
        )
        assert report.equal, report.render()


OPS = ("insert", "update", "delete")


def _caught_up(
    endpoints: Endpoints, admin: Any, group: str, topics: list[str], consumers: Consumers
) -> bool:
    """Every topic read to its end; a topic that stopped on an error fails the test at once,
    and while any lags, the lagging ones and the group's state are printed (what a timeout
    leaves to look at)."""
    assert consumers.failures == []
    config = {"bootstrap.servers": endpoints.kafka}
    lags = {t: sum(p.lag for p in offsets.positions(config, group, t)) for t in topics}
    behind = {topic: lag for topic, lag in lags.items() if lag}
    state = admin.describe_consumer_groups([group])[group].result()
    members = len(state.members)
    print(f"{time.strftime('%H:%M:%S')} group {state.state} ({members} members); lagging {behind}")
    return not behind
