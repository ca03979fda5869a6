"""How every stage reaches Kafka, the schema registry, ClickHouse, Spark and object storage:
their settings, clients, errors and retries, the progress topic, the exit codes every command
maps errors to, and the image's health check. The event contract itself is schemas/, which
this package builds on and which never imports it."""
