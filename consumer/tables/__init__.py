"""The ClickHouse side: the target ReplacingMergeTree made from the value schema and evolved
with it (table, table_check, column_types), where its tables live (placement), and which
generation of the topic it holds (generation)."""
