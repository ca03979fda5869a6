"""One look at every table due finds, for each topic and group, what a look at that table
alone finds: the progress, the partitions' ends, the group's offsets and whether anything
readable is left after them, and so the same consumed version; a topic nothing was
published to has no look."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.test_verify_asof import consumed, people
from verify.consumed import Consumed
from verify.kafka_looks import KafkaLooks

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_one_look_for_every_table_finds_what_each_finds_alone(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, first = people(spark, endpoints, tmp_path / "a")
    other, second = people(spark, endpoints, tmp_path / "b")
    groups = {
        first: consumed(endpoints, first, ch_database, table=one).verify.group,
        second: consumed(endpoints, second, ch_database, table=other).verify.group,
    }
    never = unique("group"), unique("group")  # never committed: behind on every partition
    due = [
        (first, groups[first]),
        (second, groups[second]),
        (second, never[0]),
        (second, never[1]),  # the same partitions behind for two groups
        (unique("cdc"), never[0]),  # nothing published
    ]
    config = {"bootstrap.servers": endpoints.kafka}
    together, alone = KafkaLooks(config), KafkaLooks(config)
    try:
        looked = together.together(due)
        assert set(looked) == set(due[:4])
        for (topic, group), look in looked.items():
            assert look.position.version == 4
            assert look.high == alone.ends(topic, committed=False)
            assert look.stable == alone.ends(topic, committed=True)
            assert _by_partition(look.offsets) == _by_partition(alone.positions(group, topic))
            found = Consumed(together, topic, group).version(look)
            assert found == Consumed(alone, topic, group).version()
            assert found == (4 if group == groups[topic] else None)
    finally:
        together.close()
        alone.close()


def _by_partition(offsets: list[Any]) -> list[Any]:
    return sorted(offsets, key=lambda p: p.partition)
