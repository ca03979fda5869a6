"""Every topic of a consumer process is read by one member of its group
(consumer/group/member.py): the broker sees one member holding every topic's partitions,
and the partitions that share a number in different topics each go to their own table."""

from functools import partial
from typing import Any

import pytest

from services import offsets
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import Changes, consumers_of, order
from tests.integration.test_consumer_recovery import rows, wait_for

pytestmark = pytest.mark.integration
TOPICS = 12
PARTITIONS = 2


def _holds(clickhouse: Any, table: str, count: int) -> bool:
    return bool(rows(clickhouse, table) == count)


def test_twelve_topics_are_read_by_one_member_and_each_partition_goes_to_its_own_table(
    endpoints: Endpoints, topic_factory: Any, kafka_admin: Any, clickhouse: Any, ch_database: str
) -> None:
    topics = [topic_factory(partitions=PARTITIONS) for _ in range(TOPICS)]
    # Ids of their own, so a row in another table shows. The keys land in the same partition
    # numbers in every topic.
    for n, topic in enumerate(topics):
        Changes(endpoints, topic).send([order(100 * n + i) for i in range(10)], "insert", 1)
    group = unique("group")
    with consumers_of(endpoints, topics, ch_database, group) as consumers:
        for topic in topics:
            table = f"`{ch_database}`.`{topic}`"
            wait_for(partial(_holds, clickhouse, table, 10), f"{topic} in ClickHouse")
        described = kafka_admin.describe_consumer_groups([group])[group].result()

    assert consumers.failures == []
    assert len(described.members) == 1
    held = {(tp.topic, tp.partition) for tp in described.members[0].assignment.topic_partitions}
    assert held == {(topic, p) for topic in topics for p in range(PARTITIONS)}
    for n, topic in enumerate(topics):
        found = clickhouse.query(f"SELECT id FROM `{ch_database}`.`{topic}` ORDER BY id")
        assert [row[0] for row in found.result_rows] == [100 * n + i for i in range(10)]
        committed = offsets.positions({"bootstrap.servers": endpoints.kafka}, group, topic)
        assert [p.committed for p in committed if p.high] == [p.high for p in committed if p.high]
