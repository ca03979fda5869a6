"""The Spark job a user would write instead of cdfbridge, as lake_bench's peer (`--peer`).

    .venv/bin/python bench/peer_streaming.py --config lake.toml [--trigger-s 1]

One Structured Streaming query per `[[tables]]` entry of a lake_bench config: the table's
Change Data Feed (`readChangeFeed`, from version 0), a processing-time trigger, and
`foreachBatch` inserting each micro-batch into the entry's ClickHouse target (the same
table the consumer fills, with its insert counter: bench/target.py) through Arrow, update
preimages left out as the consumer leaves them. No Kafka, no registry: one Spark driver.
Each query keeps its checkpoint in a folder of its own under --checkpoints. Runs until
SIGTERM or SIGINT, then stops every query.
"""

from __future__ import annotations

import argparse
import signal
import tempfile
import threading
import tomllib
from pathlib import Path
from typing import Any

import clickhouse_connect

from producer.settings import ProducerSettings
from services.settings import ConnectionSettings
from services.spark_session import session_for

COLUMNS = ["id", "name", "age", "created_at", "_change_type", "_commit_version"]
COLUMNS += ["_commit_timestamp", "_generation"]


def writer(url: str, database: str, target: str) -> Any:
    """foreachBatch's function: the batch's changes inserted into database.target."""
    client = clickhouse_connect.get_client(dsn=url)  # a query's batches run one at a time

    def write(batch: Any, batch_id: int) -> None:
        from pyspark.sql.functions import col, lit

        changes = batch.where(col("_change_type") != "update_preimage")
        rows = changes.withColumn("_generation", lit(0).cast("long")).select(*COLUMNS).toArrow()
        if len(rows):
            client.insert_arrow(f"`{database}`.`{target}`", rows)

    return write


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, required=True, help="a lake_bench [[tables]] file")
    p.add_argument("--trigger-s", type=float, default=1.0, help="each query's trigger")
    p.add_argument("--checkpoints", type=Path, help="default: a temporary folder")
    args = p.parse_args()
    config = tomllib.loads(args.config.read_text())
    database = config["clickhouse"]["database"]
    url = ConnectionSettings().clickhouse.url
    first = config["tables"][0]
    settings = ProducerSettings(source={"table": first["table"], "primary_key": "id"})
    spark = session_for(settings.spark, settings.storage, "cdfbridge-peer-streaming")
    checkpoints = args.checkpoints or Path(tempfile.mkdtemp(prefix="cdfbridge-peer-"))
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    queries = []
    for entry in config["tables"]:
        changes = (
            spark.readStream.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", 0)
            .load(entry["table"])
        )
        query = (
            changes.writeStream.trigger(processingTime=f"{args.trigger_s} seconds")
            .option("checkpointLocation", str(checkpoints / entry["target"]))
            .foreachBatch(writer(url, database, entry["target"]))
            .start()
        )
        queries.append(query)
    print(f"{len(queries)} queries started", flush=True)
    stop.wait()
    for query in queries:
        query.stop()
    spark.stop()


if __name__ == "__main__":
    main()
