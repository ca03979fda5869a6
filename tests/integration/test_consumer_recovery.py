"""The consumer survives crashes, restarts of ClickHouse and rebalances without losing or
doubling rows."""

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from consumer.loop import Pipeline
from tests.endpoints import Endpoints
from tests.integration.consumer_support import Changes, order, settings

pytestmark = pytest.mark.integration

# Runs the real CLI, but SIGKILLs the process right after the first ClickHouse insert,
# before the offsets are committed.
DIE_AFTER_INSERT = """
import os, signal, sys
from consumer import writer
original = writer.BatchWriter.write
def write_then_die(self, batch):
    original(self, batch)
    os.kill(os.getpid(), signal.SIGKILL)
writer.BatchWriter.write = write_then_die
from consumer.cli import main
sys.exit(main())
"""


def env_for(endpoints: Endpoints, topic: str, database: str, **consumer: str) -> dict[str, str]:
    values = {
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_KAFKA__PROPERTIES": json.dumps({"session.timeout.ms": "6000"}),
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
        "CDFBRIDGE_CLICKHOUSE__URL": endpoints.clickhouse,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": database,
        "CDFBRIDGE_CONSUMER__TOPIC": topic,
        "CDFBRIDGE_CONSUMER__GROUP": f"{topic}-group",
        "CDFBRIDGE_CONSUMER__REGISTRY_URL_FOR_CLICKHOUSE": endpoints.registry_for_clickhouse,
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
    }
    values |= {f"CDFBRIDGE_CONSUMER__{k.upper()}": v for k, v in consumer.items()}
    return {k: v for k, v in os.environ.items() if not k.startswith("CDFBRIDGE_")} | values


def test_kill_9_between_insert_and_commit_does_not_double_rows(
    endpoints: Endpoints, topic_factory: Any, clickhouse: Any, ch_database: str
) -> None:
    topic = topic_factory(partitions=1)
    changes = Changes(endpoints, topic)
    changes.send([order(n) for n in range(30)], "insert", 1)
    env = env_for(endpoints, topic, ch_database, batch_rows="1000", batch_seconds="1")

    crashed = subprocess.run(
        [sys.executable, "-c", DIE_AFTER_INSERT], env=env, timeout=120, capture_output=True
    )
    inserted_before_crash = clickhouse.command(f"SELECT count() FROM `{ch_database}`.`{topic}`")
    # More changes arrive meanwhile, so a restart that ignored the crashed batch's end would
    # cut a larger batch with another dedup token.
    changes.send([order(n, "later") for n in range(30, 50)], "insert", 2)
    restart = settings(endpoints, topic, ch_database, batch_rows=1000)
    Pipeline(restart, until_caught_up=True).run()

    assert crashed.returncode == -9, crashed.stderr.decode()[-2000:]
    assert inserted_before_crash == 30
    count = clickhouse.command(f"SELECT count() FROM `{ch_database}`.`{topic}`")
    assert count == 50
