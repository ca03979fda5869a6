"""The watch case with the consumed-version look (`--consumed`): each table is a Delta table
of its own with its Change Data Feed, published to a topic of its own by one producer
process (`[[tables]]`, `--until-version 0`), and one group has consumed every topic (its
offsets committed where the consumer commits them: at each partition's commit marker). No
round names a version: each looks at Kafka for the one the group has consumed."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, TopicPartition
from deltalake import write_deltalake
from stages import start

from services.settings import ConnectionSettings


def consumed_lake(
    lake: Path, tables: int, rows: int, logs: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The tables, published and consumed: their [[tables]] entries (target t<i>) and the
    [verify] settings the watch takes them with."""
    run = uuid.uuid4().hex[:8]
    entries = []
    for i in range(tables):
        path = lake / f"consumed_{rows}_{run}_{i}"
        ids = pa.array(range(rows), pa.int64())
        names = pc.binary_join_element_wise("name-", pc.cast(ids, pa.string()), "")
        batch = pa.table({"id": ids, "name": names, "n": pc.remainder(ids, 1000)})
        write_deltalake(str(path), batch, configuration={"delta.enableChangeDataFeed": "true"})
        topic = f"bench_look_{run}_{i}"
        entries.append({"table": str(path), "primary_key": "id", "topic": topic, "target": f"t{i}"})
    _publish(entries, lake / f"consumed_{run}.toml", logs / f"consumed_{run}.producer.log")
    group = f"bench_look_{run}"
    _commit(group, [e["topic"] for e in entries])
    return entries, {"group": group}


def _publish(entries: list[dict[str, Any]], config: Path, log: Path) -> None:
    """One producer process publishes every table's version 0."""
    lines = ["[source]", "until_version = 0", ""]
    for entry in entries:
        lines += ["[[tables]]"] + [f'{k} = "{entry[k]}"' for k in ("table", "primary_key", "topic")]
    config.write_text("\n".join(lines) + "\n")
    code = start(["producer", "--config", str(config), "--metrics-port", "0"], {**os.environ}, log)
    if code.wait() != 0:
        raise SystemExit(f"the producer exited {code.returncode}; see {log}")


def _commit(group: str, topics: list[str]) -> None:
    """The group's offsets where cdfbridge's consumer commits them: after each partition's
    last message, at its transaction's commit marker."""
    kafka = ConnectionSettings().kafka.client_config()
    consumer = Consumer({**kafka, "group.id": group, "enable.auto.commit": False})
    try:
        offsets = []
        for topic in topics:
            for partition in _partitions(consumer, topic):
                high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)[1]
                offsets.append(TopicPartition(topic, partition, max(0, high - 1)))
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()


def _partitions(consumer: Consumer, topic: str) -> list[int]:
    """The topic's partitions, once the metadata the client holds has them."""
    deadline = time.monotonic() + 30
    while not (found := consumer.list_topics(topic, timeout=30).topics[topic].partitions):
        if time.monotonic() > deadline:
            raise SystemExit(f"topic {topic} has no partitions")
        time.sleep(0.2)
    return sorted(found)
