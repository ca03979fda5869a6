"""The local service stack: Kafka, ClickHouse and a schema registry on loopback.

For machines without a Docker engine. Each service runs from registry packages
(Maven Central jars, the chdb-core wheel) as a detached process whose config,
data, log and PID live under one state directory.
"""
