"""Kafka-engine DDL text, without a server."""

from consumer.kafka_engine.ddl import HIDDEN, KafkaSource, statements
from schemas.clickhouse import InputColumn
from schemas.target import Target

SOURCE = KafkaSource(
    "kafka:9092",
    "cdfbridge.orders",
    "orders-ch",
    "http://registry:8080/apis/ccompat/v7",
    security_protocol="SASL_SSL",
    sasl_mechanism="PLAIN",
    sasl_username="u",
    sasl_password="it's-secret",  # noqa: S106 - a test value
)


def ddl(reveal: bool = False, partition_by: str = "") -> list[str]:
    return statements(
        Target("db", "orders"),
        [("id", "Int64"), ("_change_type", "String")],
        [
            InputColumn("id", "id", "Int64", "`id`"),
            InputColumn("_change_type", "_change_type", "String", "`_change_type`"),
        ],
        ["id"],
        100,
        SOURCE,
        reveal,
        partition_by,
    )


def test_kafka_table_reads_avro_confluent_through_the_registry_in_its_own_group() -> None:
    queue = ddl()[3]

    assert queue.startswith("CREATE TABLE IF NOT EXISTS `db`.`orders_kafka` (`id` Int64,")
    assert "ENGINE = Kafka" in queue
    for setting in (
        "kafka_broker_list = 'kafka:9092'",
        "kafka_topic_list = 'cdfbridge.orders'",
        "kafka_group_name = 'orders-ch'",
        "kafka_format = 'AvroConfluent'",
        "format_avro_schema_registry_url = 'http://registry:8080/apis/ccompat/v7'",
        "kafka_security_protocol = 'sasl_ssl'",
        "kafka_max_block_size = 100000",
        "kafka_flush_interval_ms = 5000",
        "kafka_handle_error_mode = 'stream'",
    ):
        assert setting in queue


def test_view_moves_the_value_columns_into_the_replacing_merge_tree() -> None:
    table, view, _, _, pump, errors_pump = ddl()

    assert "ReplacingMergeTree(`_version`, `_is_deleted`)" in table
    assert view.startswith("CREATE OR REPLACE VIEW `db`.`orders_current`")
    assert pump == (
        "CREATE MATERIALIZED VIEW IF NOT EXISTS `db`.`orders_kafka_mv` TO `db`.`orders`\n"
        "AS SELECT `id`, `_change_type` FROM `db`.`orders_kafka` WHERE length(_error) = 0"
    )
    assert errors_pump.startswith(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS `db`.`orders_kafka_errors_mv` "
        "TO `db`.`orders_kafka_errors`"
    )
    assert errors_pump.endswith("FROM `db`.`orders_kafka` WHERE length(_error) > 0")


def test_sasl_password_is_masked_unless_applied() -> None:
    assert f"kafka_sasl_password = '{HIDDEN}'" in ddl()[3]
    assert "kafka_sasl_password = 'it\\'s-secret'" in ddl(reveal=True)[3]


def test_the_target_table_takes_the_partition_key_and_the_kafka_table_does_not() -> None:
    target, _, _, queue, *_ = ddl(partition_by="id % 8")

    assert "PARTITION BY id % 8\nORDER BY (`id`)" in target
    assert "PARTITION BY" not in queue
