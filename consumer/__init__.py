"""Kafka → ClickHouse ReplacingMergeTree."""
