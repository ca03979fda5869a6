"""What a resync reads and writes in the progress topic, and which table it names: pure
logic, no services."""

import json
from pathlib import Path

import pytest

from producer.cli import main
from producer.errors import TopicRecreatedError
from producer.lake.start import check_topic
from producer.publish.topics import DataTopic
from producer.resync.resync_command import chosen_topic, describe
from producer.settings import ProducerSettings
from schemas.errors import ConfigError
from schemas.progress import LOST_TOPIC_ID, Generation, Position, decode, encode


def test_a_generation_round_trips_through_its_progress_record_fields() -> None:
    generation = Generation(2, {1: 40, 0: 7})

    fields = generation.fields()

    assert fields == {"generation": 2, "generation_start": {"0": 7, "1": 40}}
    assert Generation.of({"version": 9, **fields}) == generation


def test_a_record_names_its_value_schema_and_an_older_record_names_none() -> None:
    record = encode(4, Generation(1, {0: 3}), None, (), value_schema=199)

    assert decode(record).value_schema == 199
    assert decode(b'{"version": 4}').value_schema is None


def test_a_record_names_its_data_topic_by_kafka_id_and_an_older_record_names_none() -> None:
    record = encode(4, Generation(), None, (), topic_id="ZHwu8rXqRqycPSX4T6QFzg")

    assert decode(record).topic_id == "ZHwu8rXqRqycPSX4T6QFzg"
    assert decode(b'{"version": 4}').topic_id is None
    assert "topic_id" not in json.loads(encode(4, Generation(), None, ()))


@pytest.mark.parametrize(
    ("position", "why"),
    [
        (Position(7, topic_id="old-id"), r"Kafka id is new-id; .* topic id old-id\."),
        (Position(7), r"missing at this start, though .* up to 7\."),  # no id yet
        (Position(7, topic_id=LOST_TOPIC_ID), r"an earlier start found it missing, .* to 7\."),
    ],
)
def test_a_data_topic_created_again_is_refused_naming_the_resync(
    position: Position, why: str
) -> None:
    with pytest.raises(TopicRecreatedError, match=rf"{why}.*resync"):
        check_topic(position, DataTopic("new-id", created=True), "/lake/orders", "orders")


@pytest.mark.parametrize(
    ("position", "created"),
    [
        (Position(7, topic_id="same-id"), False),  # the topic it was written beside
        (Position(7), False),  # a record older than topic ids, the topic there
        (Position(None), True),  # nothing published yet
        (Position(7, Generation(1, {0: 3}), requested=2, topic_id="old-id"), True),  # resync
    ],
)
def test_a_data_topic_is_taken_when_it_holds_what_its_progress_counts_or_a_resync_starts(
    position: Position, created: bool
) -> None:
    check_topic(position, DataTopic("same-id", created), "/lake/orders", "orders")


def test_a_record_without_a_generation_is_generation_0_and_writes_no_fields() -> None:
    assert Generation.of({"version": 9}) == Generation()
    assert Generation().fields() == {}


def test_a_request_above_the_generation_is_pending_and_the_next_one_comes_after_both() -> None:
    pending = Position(5, Generation(1, {0: 3}), requested=2)
    taken = Position(5, Generation(2, {0: 9}), requested=2)

    assert pending.resync_pending and pending.next_generation == 3
    assert not taken.resync_pending and taken.next_generation == 3
    assert not Position(5).resync_pending and Position(5).next_generation == 1


def lake() -> ProducerSettings:
    return ProducerSettings(
        tables=[
            {"table": "/lake/orders", "primary_key": "id"},
            {"table": "/lake/users", "primary_key": "id", "topic": "users"},
        ]
    )


@pytest.mark.parametrize(
    ("name", "topic"),
    [
        ("/lake/orders", "cdfbridge.orders"),
        ("cdfbridge.orders", "cdfbridge.orders"),
        ("users", "users"),
        ("/lake/users", "users"),
    ],
)
def test_a_resync_names_its_table_by_path_or_topic(name: str, topic: str) -> None:
    assert chosen_topic(lake(), name) == topic


def test_a_resync_among_several_tables_without_a_name_lists_them() -> None:
    with pytest.raises(ConfigError, match=r"name the table to resync.*cdfbridge\.orders, users"):
        chosen_topic(lake(), None)


def test_the_resync_command_without_a_name_exits_2_before_reaching_kafka(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "lake.toml"
    config.write_text(
        '[kafka]\nbootstrap_servers = "127.0.0.1:1"\n'
        '[[tables]]\ntable = "/lake/a"\nprimary_key = "id"\n'
        '[[tables]]\ntable = "/lake/b"\nprimary_key = "id"\n'
    )

    code = main(["--config", str(config), "resync", "nope"])

    assert code == 2
    assert "no table or topic 'nope'" in capsys.readouterr().err


def test_what_the_resync_prints_once_taken_names_the_rebuild_to_run() -> None:
    printed = describe("t", Position(7, Generation(1, {0: 4, 1: 2}), requested=1))

    assert "t: generation 1 published, snapshot at version 7" in printed
    assert "partition 0 at 4, partition 1 at 2" in printed
    assert "cdfbridge-consumer --topic t rebuild" in printed
    assert "no producer has published" in describe("t", Position(7, requested=1))
