"""Delta Change Data Feed → Avro → Kafka."""
