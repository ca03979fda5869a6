"""Durable progress: restarts resume where the last transaction left off, kill -9 included."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from producer.errors import FencedError
from producer.publish.publish import Publisher
from producer.publish.topics import ensure_topics
from services.progress_topic import Progress
from services.settings import KafkaConfig
from tests.conftest import unique
from tests.endpoints import Endpoints
from tests.producer_helpers import create_table, publish, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def commits(spark: Any, path: str, count: int, rows: int) -> None:
    """count commits of rows new keys each, on a CDF-enabled table."""
    create_table(spark, path)
    for c in range(count):
        frame = spark.range(c * rows, (c + 1) * rows).selectExpr(
            "cast(id as string) as id", "'n' as name", "id as age"
        )
        frame.write.format("delta").mode("append").save(path)


def producer_process(
    endpoints: Endpoints, path: str, topic: str, *flags: str
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
    }
    command = [sys.executable, "-m", "producer", "--table", path, "--primary-key", "id"]
    command += ["--topic", topic, "--metrics-port", "0", *flags]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_messages(
    endpoints: Endpoints, topic: str, at_least: int, timeout_s: float = 120
) -> None:
    admin = AdminClient({"bootstrap.servers": endpoints.kafka})
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": endpoints.kafka, "group.id": unique("probe")})
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            topics = admin.list_topics(timeout=10).topics
            if topic in topics:
                try:
                    total = sum(
                        consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                        for p in topics[topic].partitions
                    )
                except KafkaException:  # a new topic's leaders may not be elected yet
                    total = 0
                if total >= at_least:
                    return
            time.sleep(0.2)
    finally:
        consumer.close()
    raise AssertionError(f"{topic} did not reach {at_least} messages in {timeout_s} s")


def following(
    spark: Any, endpoints: Endpoints, path: str, count: int, rows: int
) -> subprocess.Popen[bytes]:
    """A producer process following a table of count commits, once all their rows are out."""
    commits(spark, path, count=count, rows=rows)
    topic = unique("cdc")
    follower = producer_process(endpoints, path, topic, "--poll-interval", "0.2")
    wait_for_messages(endpoints, topic, at_least=count * rows)
    return follower


def test_restart_resumes_after_the_last_published_version(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    commits(spark, delta_path, count=4, rows=10)
    topic = unique("cdc")

    publish(spark, endpoints, delta_path, "id", topic=topic, until_version=2)
    publish(spark, endpoints, delta_path, "id", topic=topic, until_version=4)

    records = read_topic(endpoints, topic)
    assert Counter(r.value["_commit_version"] for r in records if r.value) == {
        1: 10,
        2: 10,
        3: 10,
        4: 10,
    }
    assert Progress({"bootstrap.servers": endpoints.kafka}, topic).last_version() == 4


def test_kill_9_mid_chunk_then_restart_leaves_no_gap_and_no_duplicate(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    commits(spark, delta_path, count=12, rows=3000)
    topic = unique("cdc")
    victim = producer_process(
        endpoints, delta_path, topic, "--until-version", "12", "--max-rows-per-chunk", "3000"
    )
    wait_for_messages(endpoints, topic, at_least=4000)  # inside the second chunk's transaction
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)

    publish(spark, endpoints, delta_path, "id", topic=topic, until_version=12)

    records = read_topic(endpoints, topic)
    seen = Counter((r.key["id"], r.value["_commit_version"]) for r in records if r.value)
    assert len(seen) == 12 * 3000
    assert max(seen.values()) == 1


def test_sigterm_aborts_the_open_transaction_and_exits_0(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    follower = following(spark, endpoints, delta_path, count=2, rows=100)

    follower.send_signal(signal.SIGTERM)

    assert follower.wait(60) == 0, follower.stderr.read() if follower.stderr else ""


def test_a_lost_spark_driver_is_named_with_exit_code_3(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    follower = following(spark, endpoints, delta_path, count=1, rows=100)

    message = _driver_killed(follower)

    assert "--max-bytes-per-chunk" in message
    assert "Exception while sending command" not in message  # py4j's retries, at INFO


def test_a_lost_spark_driver_stops_a_lake_with_exit_code_3(
    spark: Any, endpoints: Endpoints, tmp_path: Path
) -> None:
    entries, topics = [], []
    for name in "ab":
        path, topic = str(tmp_path / name), unique("cdc")
        commits(spark, path, count=1, rows=100)
        entries.append(f'[[tables]]\ntable = "{path}"\nprimary_key = "id"\ntopic = "{topic}"\n')
        topics.append(topic)
    config = tmp_path / "lake.toml"
    config.write_text("[source]\npoll_interval_s = 0.2\nmetrics_port = 0\n\n" + "\n".join(entries))
    env = {
        **os.environ,
        "CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": endpoints.kafka,
        "CDFBRIDGE_SCHEMA_REGISTRY__URL": endpoints.registry,
    }
    command = [sys.executable, "-m", "producer", "--config", str(config)]
    follower = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for topic in topics:
        wait_for_messages(endpoints, topic, at_least=100)

    _driver_killed(follower)


def _driver_killed(follower: subprocess.Popen[bytes]) -> str:
    """The producer's driver JVM killed (its child: a JVM killed for lack of memory looks
    the same); requires exit 3 naming the driver, and returns its stderr."""
    jvm = Path(f"/proc/{follower.pid}/task/{follower.pid}/children").read_text().split()
    assert len(jvm) == 1
    os.kill(int(jvm[0]), signal.SIGKILL)
    code = follower.wait(60)
    message = follower.stderr.read().decode() if follower.stderr else ""
    assert code == 3, message[-3000:]
    assert "the Spark driver JVM died or stopped answering" in message
    return message


def test_a_second_producer_fences_the_first(endpoints: Endpoints) -> None:
    import pyarrow as pa

    topic = unique("fenced")
    config: KafkaConfig = {"bootstrap.servers": endpoints.kafka}
    ensure_topics(config, topic, 1)  # its data and progress topics, as a start makes them
    first, second = Publisher(config, topic), Publisher(config, topic)
    first.start()
    second.start()
    batch = pa.RecordBatch.from_pydict({"key": [b"k"], "value": [b"v"], "_is_delete": [False]})

    with pytest.raises(FencedError, match="another producer"):
        first.publish([batch], last_version=1, stop=lambda: False)
    assert second.publish([batch], last_version=1, stop=lambda: False) == 1


def test_the_producer_log_has_no_warning_per_task(
    spark: Any, endpoints: Endpoints, delta_path: str
) -> None:
    commits(spark, delta_path, count=3, rows=100)
    process = producer_process(endpoints, delta_path, unique("cdc"), "--until-version", "3")

    assert process.wait(120) == 0
    log = process.stderr.read().decode() if process.stderr else ""
    assert '"event": "chunk_published"' in log
    assert "non-nullable Avro schema" not in log
