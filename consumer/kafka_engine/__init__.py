"""ClickHouse's Kafka engine as the consumer: the DDL (ddl), what one apply does for a topic
(plan), following schema changes (evolve), subscribers that start late (late), rebuilds at a
new generation (rebuild), and `kafka-engine-ddl --watch` (watch)."""
