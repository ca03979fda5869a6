"""Fault injection: while the generator keeps committing, kill -9 the producer and the consumer
several times at seeded random points, and restart Kafka and ClickHouse once each. At the end
ClickHouse equals the Delta table, and a read_committed scan of the topic holds no duplicate
(key, version). Small in CI; `--faults-large` for scale; `--fault-seed` replays a schedule."""

from __future__ import annotations

import collections
import os
import random
import time
from functools import partial
from pathlib import Path

import pytest
from deltalake import DeltaTable

from schemas.changes import version
from services.progress_topic import Progress
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.fault_support import (
    LARGE,
    SMALL,
    Supervised,
    Supervisor,
    command,
    schedule,
    wait_until,
)
from tests.producer_helpers import read_topic
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.faults]


@pytest.mark.parametrize("tables", [1, 2], ids=["one table", "two tables in one process"])
def test_no_change_is_lost_or_doubled_through_kills_and_restarts(
    endpoints: Endpoints,
    tmp_path: Path,
    ch_database: str,
    request: pytest.FixtureRequest,
    tables: int,
) -> None:
    if endpoints.restart is None:
        pytest.fail(
            f"the fault suite restarts Kafka and ClickHouse, which it cannot do to {endpoints.origin}"
            " services: run it on the local stack (no CDFBRIDGE_* service env vars, no Docker)"
        )
    scale = LARGE if request.config.getoption("--faults-large") else SMALL
    seed = request.config.getoption("--fault-seed")
    if seed is None:
        seed = random.SystemRandom().randrange(10**6)
    rng = random.Random(seed)  # noqa: S311 - a replayable schedule, not a secret
    faults = schedule(rng, scale.commits * scale.interval_s, scale.kills)
    print(f"fault seed {seed} (replay: --fault-seed {seed}); {scale}; schedule {faults}")

    lake = {
        f"people{i}": (str(tmp_path / f"people{i}"), unique("cdfbridge.faults"))
        for i in range(tables)
    }
    for path, _ in lake.values():
        Generator(path)  # creates the table, so the producer never starts before it exists
    env = {
        **os.environ,
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
        "CDFBRIDGE_CLICKHOUSE__URL": endpoints.clickhouse,
        "CDFBRIDGE_CLICKHOUSE__DATABASE": ch_database,
        "CDFBRIDGE_CONSUMER__REGISTRY_URL_FOR_CLICKHOUSE": endpoints.registry_for_clickhouse,
        "CDFBRIDGE_CONSUMER__METRICS_PORT": "0",
        "CDFBRIDGE_CONSUMER__BATCH_SECONDS": "0.5",
        "CDFBRIDGE_CONSUMER__MAX_BACKOFF_SECONDS": "2",
        "CDFBRIDGE_SOURCE__POLL_INTERVAL_S": "0.5",
        "CDFBRIDGE_SOURCE__METRICS_PORT": "0",
    }
    generators = [
        Supervised(
            f"generator {name}",
            command(
                "stack.generate",
                *("--table", path, "--seed", str(seed + n)),
                *("--commits", str(scale.commits), "--rows-per-commit", str(scale.rows_per_commit)),
                *("--interval", str(scale.interval_s)),
            ),
            env,
            tmp_path / f"generator-{name}.log",
        )
        for n, (name, (path, _)) in enumerate(lake.items())
    ]
    producer_args, consumer_args = _stage_args(lake, tmp_path)
    producer = Supervised(
        "producer", command("producer", *producer_args), env, tmp_path / "producer.log"
    )
    consumer = Supervised(
        "consumer", command("consumer", *consumer_args, "run"), env, tmp_path / "consumer.log"
    )
    processes = {"producer": producer, "consumer": consumer}
    for process in (*generators, producer, consumer):
        process.start()
    supervisor = Supervisor([producer, consumer])
    supervisor.start()
    reports = []
    try:
        began = time.monotonic()
        for fault in faults:
            time.sleep(max(0.0, began + fault.at_s - time.monotonic()))
            supervisor.check()
            verb, name = fault.action.split()
            with supervisor.lock:
                if verb == "kill":
                    processes[name].kill()
                else:
                    endpoints.restart(name)
            print(f"{time.monotonic() - began:6.1f} s  {fault.action}")
        for generator in generators:
            assert generator.process is not None
            assert generator.process.wait(scale.commits * scale.interval_s * 3 + 120) == 0, (
                generator.tail()
            )
        for name, (path, topic) in lake.items():
            last = DeltaTable(path).version()
            progress = Progress({"bootstrap.servers": endpoints.kafka}, topic)
            wait_until(
                partial(_published, progress, last),
                600,
                f"version {last} published",
                supervisor,
            )
            reports.append(
                verify(
                    VerifySettings(
                        kafka={"bootstrap_servers": endpoints.kafka},
                        clickhouse={"url": endpoints.clickhouse, "database": ch_database},
                        verify={
                            "table": path,
                            "topic": topic,
                            "clickhouse_table": name,
                            "wait_seconds": 600,
                        },
                    )
                )
            )
        supervisor.check()
    finally:
        supervisor.done.set()
        supervisor.join()
        codes = {name: p.stop() for name, p in processes.items()}
        for name, p in processes.items():
            print(f"{name}: {p.history}")

    for report in reports:
        print(report.render())
        assert report.equal, f"seed {seed}:\n{report.render()}"
        assert (report.lost, report.extra) == (0, 0)
    assert codes == {"producer": 0, "consumer": 0}, (producer.tail(), consumer.tail())
    for _, topic in lake.values():
        assert_no_duplicate_key_versions(endpoints, topic, seed)


def _published(progress: Progress, version: int) -> bool:
    return progress.last_version() == version


def _stage_args(lake: dict[str, tuple[str, str]], folder: Path) -> tuple[list[str], list[str]]:
    """The producer's and the consumer's arguments: flags for one table, else one config file
    with [[tables]] that both read."""
    if len(lake) == 1:
        ((name, (path, topic)),) = lake.items()
        return ["--table", path, "--primary-key", "id", "--topic", topic], [
            "--topic",
            topic,
            "--table",
            name,
        ]
    entries = [
        f'[[tables]]\ntable = "{path}"\nprimary_key = "id"\ntopic = "{topic}"\ntarget = "{name}"'
        for name, (path, topic) in lake.items()
    ]
    config = folder / "lake.toml"
    config.write_text("\n\n".join(entries) + "\n")
    return ["--config", str(config)], ["--config", str(config)]


def assert_no_duplicate_key_versions(endpoints: Endpoints, topic: str, seed: int) -> None:
    records = read_topic(endpoints, topic)
    seen = collections.Counter(
        (r.key["id"], version(r.value["_commit_version"], r.value["_change_type"]))
        for r in records
        if r.value is not None
    )
    duplicates = {kv: n for kv, n in seen.items() if n > 1}
    print(f"topic {topic}: {len(records):,} committed records, {len(duplicates)} duplicated")
    assert records and not duplicates, (
        f"seed {seed}: {len(duplicates)} duplicated, e.g. {list(duplicates.items())[:5]}"
    )
