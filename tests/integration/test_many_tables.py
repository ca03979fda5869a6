"""Many tables through one producer: each keeps its own topic and progress, exactly once, and
a table that fails does so alone."""

import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from consumer.group.loop import Pipeline
from producer.errors import FencedError, NullKeyError, SchemaChangeError
from producer.lake.lake import stops_every_table
from producer.run import run
from producer.settings import ProducerSettings
from schemas.column_policy import ColumnPolicyError
from schemas.errors import TableConfigError
from services.progress_topic import Progress
from services.registry_errors import RegistryAccessError
from services.service_errors import UnreachableError
from stack.generate import Generator
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.integration.consumer_support import settings as consumer_settings
from tests.integration.test_producer_recovery import wait_for_messages
from tests.producer_helpers import read_topic
from verify.check import verify
from verify.settings import VerifySettings

pytestmark = [pytest.mark.integration, pytest.mark.spark]
OPERATIONS = ("insert", "update", "delete", "merge", "insert")


def lake(root: Path, names: str, rows: int = 100) -> dict[str, tuple[str, int]]:
    """A table per name, each changed every way: {name: (path, last version)}."""
    tables = {}
    for seed, name in enumerate(names):
        path, generator = str(root / name), Generator(str(root / name), seed=seed)
        last = max(generator.commit(operation, rows) for operation in OPERATIONS)
        tables[name] = (path, last)
    return tables


def producer_settings(endpoints: Endpoints, tables: list[dict[str, Any]]) -> ProducerSettings:
    return ProducerSettings(
        kafka={"bootstrap_servers": endpoints.kafka},
        schema_registry={"url": endpoints.registry},
        source={"metrics_port": None, "poll_interval_s": 0.2},
        tables=tables,
    )


def changes_of(path: str, last: int) -> int:
    """How many changes a producer publishes for versions 0..last (no preimages)."""
    from deltalake import DeltaTable

    feed = DeltaTable(path).load_cdf(starting_version=0, ending_version=last).read_all()
    return sum(kind != "update_preimage" for kind in feed.column("_change_type").to_pylist())


def published_once(endpoints: Endpoints, topic: str) -> Counter[tuple[str, int]]:
    records = read_topic(endpoints, topic)
    seen = Counter((r.key["id"], r.value["_commit_version"]) for r in records if r.value)
    assert max(seen.values()) == 1, f"{topic} holds a change twice"
    return seen


def test_three_tables_through_one_producer_each_reach_clickhouse_equal(
    spark: Any, endpoints: Endpoints, tmp_path: Path, ch_database: str
) -> None:
    tables = lake(tmp_path, "abc")
    topics = {name: unique(f"lake_{name}") for name in tables}
    entries = [
        {"table": path, "primary_key": "id", "topic": topics[name], "until_version": last}
        for name, (path, last) in tables.items()
    ]

    run(producer_settings(endpoints, entries), spark=spark)

    for name, (path, last) in tables.items():
        topic = topics[name]
        assert len(published_once(endpoints, topic)) == changes_of(path, last)
        assert Progress({"bootstrap.servers": endpoints.kafka}, topic).last_version() == last
        into = consumer_settings(endpoints, topic, ch_database, table=name, group=unique("g"))
        Pipeline(into, until_caught_up=True).run()
        report = verify(
            VerifySettings(
                kafka={"bootstrap_servers": endpoints.kafka},
                clickhouse={"url": endpoints.clickhouse, "database": ch_database},
                verify={"table": path, "topic": topic, "clickhouse_table": name},
            )
        )
        assert report.equal, report.render()


def test_a_table_whose_schema_changes_incompatibly_fails_alone_while_another_flows(
    spark: Any, endpoints: Endpoints, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tables = lake(tmp_path, "ab", rows=20)
    (flowing, _), (failing, _) = tables["a"], tables["b"]
    topics = {"a": unique("lake_a"), "b": unique("lake_b")}
    entries = [
        {"table": flowing, "primary_key": "id", "topic": topics["a"]},
        {"table": failing, "primary_key": "id", "topic": topics["b"]},
    ]
    stop, raised = threading.Event(), list[BaseException]()
    producer = threading.Thread(target=_run_into, args=(endpoints, entries, spark, stop, raised))
    producer.start()
    try:
        wait_for_messages(endpoints, topics["b"], at_least=20)
        _drop_a_column(failing)  # `age` dropped: a change the producer refuses to follow
        _wait_for(lambda: _failures(topics["b"]) >= 1, "table b to fail")
        newest = Generator(flowing, seed=9).commit("insert", rows=7)
        progress = Progress({"bootstrap.servers": endpoints.kafka}, topics["a"])
        _wait_for(lambda: progress.last_version() == newest, "table a to publish its commit")
        assert producer.is_alive()
        failed = REGISTRY.get_sample_value(
            "cdfbridge_producer_table_failed", {"topic": topics["b"]}
        )
        assert failed == 1
        assert (
            REGISTRY.get_sample_value("cdfbridge_producer_table_failed", {"topic": topics["a"]})
            == 0
        )
    finally:
        stop.set()
        producer.join(60)
    assert not producer.is_alive() and raised == []
    logged = [r.getMessage() for r in caplog.records if '"table_failed"' in r.getMessage()]
    assert logged and "SchemaChangeError" in logged[0] and topics["b"] in logged[0]


def test_kill_9_of_the_many_table_producer_then_restart_leaves_no_gap_and_no_duplicate(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    tables = lake(tmp_path, "abc", rows=3000)
    topics = {name: unique(f"lake_{name}") for name in tables}
    entries = [
        {"table": path, "primary_key": "id", "topic": topics[name], "until_version": last}
        for name, (path, last) in tables.items()
    ]
    config = _lake_file(tmp_path, endpoints, entries, max_rows_per_chunk=1000)
    victim = _producer(config)
    wait_for_messages(endpoints, topics["b"], at_least=1500)  # inside a later transaction
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)

    restarted = subprocess.run(_command(config), capture_output=True, timeout=300)

    assert restarted.returncode == 0, restarted.stderr.decode()[-2000:]
    for name, (path, last) in tables.items():
        assert len(published_once(endpoints, topics[name])) == changes_of(path, last)


def test_a_table_taken_over_by_another_producer_stops_every_table_with_exit_4(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    from producer.publish.publish import Publisher

    tables = lake(tmp_path, "ab", rows=10)
    topics = {name: unique(f"lake_{name}") for name in tables}
    entries = [
        {"table": p, "primary_key": "id", "topic": topics[n]} for n, (p, _) in tables.items()
    ]
    follower = _producer(_lake_file(tmp_path, endpoints, entries))
    try:
        for topic in topics.values():
            wait_for_messages(endpoints, topic, at_least=10)
        taker = Publisher({"bootstrap.servers": endpoints.kafka}, topics["a"])
        taker.start()  # fences the lake's producers
        taker.close()
        Generator(tables["a"][0], seed=5).commit("insert", rows=3)

        assert follower.wait(120) == 4
    finally:
        follower.kill()
    message = follower.stderr.read().decode() if follower.stderr else ""
    assert "another producer took over" in message and "cdfbridge-lake-" in message


def _run_into(
    endpoints: Endpoints, entries: list[dict[str, Any]], spark: Any, stop: Any, raised: list[Any]
) -> None:
    try:
        run(producer_settings(endpoints, entries), spark=spark, stop=stop)
    except BaseException as exc:  # noqa: BLE001 - handed to the test thread
        raised.append(exc)


def _drop_a_column(path: str) -> None:
    from deltalake import DeltaTable, write_deltalake

    rows = DeltaTable(path).to_pyarrow_table(columns=["id", "name"])
    write_deltalake(path, rows, mode="overwrite", schema_mode="overwrite")


def _failures(topic: str) -> float:
    found = REGISTRY.get_sample_value("cdfbridge_producer_table_failures_total", {"topic": topic})
    return found or 0.0


def _wait_for(condition: Any, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        time.sleep(0.2)


def _command(config: Path) -> list[str]:
    return [sys.executable, "-m", "producer", "--config", str(config)]


def _producer(config: Path) -> subprocess.Popen[bytes]:
    """The many-table producer as a process of its own, its stderr kept."""
    return subprocess.Popen(_command(config), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _lake_file(
    folder: Path, endpoints: Endpoints, entries: list[dict[str, Any]], **source: Any
) -> Path:
    config = folder / "lake.toml"
    config.write_text(_toml(endpoints, entries, **source))
    return config


def _toml(endpoints: Endpoints, entries: list[dict[str, Any]], **source: Any) -> str:
    lines = [
        f'[kafka]\nbootstrap_servers = "{endpoints.kafka}"',
        f'[schema_registry]\nurl = "{endpoints.registry}"',
        "[source]\nmetrics_port = 0\npoll_interval_s = 0.2",
        *(f"{key} = {value}" for key, value in source.items()),
    ]
    for entry in entries:
        lines.append("[[tables]]")
        lines += [f"{key} = {_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


@pytest.mark.parametrize(
    ("error", "every_table"),
    [
        (FencedError("cdfbridge-t"), True),
        (UnreachableError("Kafka", "k:9092", 5, "timed out"), True),
        (RegistryAccessError("http://registry", 401, "unauthorized"), True),
        (SchemaChangeError("/t", 3, "age dropped"), False),
        (NullKeyError("/t", 3, ["id"]), False),
        (ColumnPolicyError("no column ssn"), False),
        (TableConfigError("Kafka refuses the topic name 'a b'"), False),
        (ValueError("an error of no kind of ours"), False),
    ],
)
def test_which_failures_stop_every_table_and_which_fail_one_alone(
    spark: Any, error: Exception, every_table: bool
) -> None:
    assert stops_every_table(error, spark) is every_table
