"""Isolating the messages ClickHouse refuses: bisection down to single messages."""

from collections.abc import Sequence

import pytest
from confluent_kafka import Message as KafkaMessage

from consumer.group.isolate import insert_isolating
from services.clickhouse_errors import BadDataError, ClickHouseUnavailableError


def Message(offset: int) -> KafkaMessage:  # noqa: N802 - reads as the type it makes
    """A confluent_kafka.Message of partition 0 of topic `t`."""
    return KafkaMessage(topic="t", partition=0, offset=offset, value=b"v")


class Table:
    """Accepts a block only when it holds none of the bad offsets, like ClickHouse."""

    def __init__(self, bad: set[int], code: int = 321) -> None:
        self.bad = bad
        self.code = code
        self.rows: list[int] = []
        self.tokens: list[str] = []

    def insert(self, messages: Sequence[KafkaMessage], token: str) -> None:
        if any(m.offset() in self.bad for m in messages):
            raise BadDataError("does not fit", self.code)
        self.rows += [m.offset() or 0 for m in messages]
        self.tokens.append(token)


def test_bad_messages_are_found_and_the_rest_inserted_once() -> None:
    table = Table(bad={3, 9})
    messages = [Message(n) for n in range(12)]

    poison = insert_isolating(messages, table.insert)

    assert [m.offset() for m, _ in poison] == [3, 9]
    assert all("does not fit the table" in why for _, why in poison)
    assert sorted(table.rows) == [n for n in range(12) if n not in (3, 9)]
    assert len(set(table.tokens)) == len(table.tokens)  # every block has its own token


def test_a_clean_batch_is_one_insert_with_its_offset_range_token() -> None:
    table = Table(bad=set())

    assert insert_isolating([Message(n) for n in range(5, 9)], table.insert) == []
    assert table.tokens == ["t-0-5-8"]


def test_schema_fetch_failure_on_a_decodable_message_is_transient_not_poison() -> None:
    table = Table(bad={0}, code=86)

    with pytest.raises(ClickHouseUnavailableError, match="cannot fetch the schema"):
        insert_isolating([Message(0)], table.insert)
