"""Encoding changes as Confluent-framed Avro: the topic's schemas in the registry, their evolution, and slices by key hash."""
