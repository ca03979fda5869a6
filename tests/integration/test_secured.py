"""The whole pipeline against secured services (`cdfbridge-stack up --secure`): Kafka over
SASL_SSL with SCRAM-SHA-512, ClickHouse with a password and the registry with basic auth, both
over TLS. Every command runs as a process with the settings `env --secure` exports; then each
password is searched for in every place it could leak to."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stack.generate import Generator
from tests.conftest import free_port, unique
from tests.integration.secured_support import Secured, secured_stack

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COMMANDS: dict[str, list[list[str]]] = {
    "producer": [[], ["resync"]],
    "consumer": [[], ["run"], ["kafka-engine-ddl"], ["rebuild"], ["reset-offsets"], ["status"]],
    "verify": [[]],
    "stack": [[], ["up"], ["env"]],
}


@pytest.fixture(scope="module")
def secured() -> Iterator[Secured]:
    with secured_stack() as found:
        yield found


@pytest.fixture(scope="module")
def published(secured: Secured, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, int]:
    """A small Delta table with every kind of change, published by a producer that follows
    it, its /metrics page kept for the search for secrets: (its path, the topic, its last
    version)."""
    from services.progress_topic import Progress

    path = str(tmp_path_factory.mktemp("secured") / "people")
    generator = Generator(path, seed=11)
    last = 0
    for operation in ("insert", "update", "merge", "delete"):
        last = generator.commit(operation, 300)
    topic, port = unique("secured"), free_port()
    producer = subprocess.Popen(
        [sys.executable, "-m", "producer", "--table", path, "--primary-key", "id"]
        + ["--topic", topic, "--metrics-port", str(port)],
        env=secured.environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    progress = Progress(secured.kafka_config(), topic)
    try:
        wait_until(lambda: producer.poll() is None and progress.last_version() == last, "publish")
        page = scrape(port, "metrics")
    finally:
        producer.send_signal(signal.SIGTERM)
        out, _ = producer.communicate(timeout=60)
        secured.outputs.append(out)
    assert producer.returncode == 0, out[-3000:]
    assert b"cdfbridge_producer_rows_published" in page
    secured.outputs.append(page.decode())
    return path, topic, last


def scrape(port: int, page: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/{page}", timeout=5) as answer:  # noqa: S310
        body: bytes = answer.read()
        return body


def current_rows(client: Any, table: str) -> int:
    try:
        return int(client.command(f"SELECT count() FROM `{table}_current`"))
    except Exception:  # noqa: BLE001 - not created yet
        return -1


def wait_until(check: Any, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what} not within {timeout_s:.0f} s"
        time.sleep(0.5)


def dead_letters(secured: Secured, topic: str) -> list[Any]:
    from confluent_kafka import Consumer

    reader = Consumer(
        secured.kafka_config() | {"group.id": unique("dlq-reader"), "auto.offset.reset": "earliest"}
    )
    reader.subscribe([f"{topic}.dlq"])
    found: list[Any] = []
    deadline = time.monotonic() + 30
    while not found and time.monotonic() < deadline:
        message = reader.poll(1)
        if message is not None and message.error() is None:
            found.append(message)
    reader.close()
    return found


def test_the_pipeline_runs_on_secured_services_and_leaks_no_secret(
    secured: Secured, published: tuple[str, str, int]
) -> None:
    from confluent_kafka import Producer
    from deltalake import DeltaTable

    path, topic, _ = published
    table = topic  # the consumer's default: the topic's name (no cdfbridge. prefix)
    expected = DeltaTable(path).to_pyarrow_table().num_rows
    client = secured.clickhouse()

    # A message no schema reads, for the dead-letter topic.
    poison = Producer(secured.kafka_config())
    poison.produce(topic, key=b"poison", value=b"\x07not avro")
    assert poison.flush(30) == 0

    # 1. The consumer, its /metrics and /health, and its dead letter.
    port = free_port()
    consumer = subprocess.Popen(
        [sys.executable, "-m", "consumer", "--topic", topic, "run"],
        env=secured.environment({"CDFBRIDGE_CONSUMER__METRICS_PORT": str(port)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: current_rows(client, table) == expected, "every current row")
        letters = dead_letters(secured, topic)
        pages = [scrape(port, page) for page in ("metrics", "health")]
    finally:
        consumer.send_signal(signal.SIGTERM)
        out, _ = consumer.communicate(timeout=60)
        secured.outputs.append(out)
    assert consumer.returncode == 0, out[-3000:]
    assert len(letters) == 1 and letters[0].key() == b"poison"
    headers = letters[0].headers() or []
    assert any(key == "cdfbridge.error" for key, _ in headers), headers
    assert b"cdfbridge_consumer" in pages[0]

    # 2. status, verify, and the Kafka engine (SASL_SSL, and the registry with basic auth).
    for done in (
        secured.run("consumer", "--topic", topic, "status"),
        secured.run("verify", "--table", path, "--topic", topic, "--wait", "60"),
        printed := secured.run("consumer", "--topic", topic, "kafka-engine-ddl"),
        secured.run(
            "consumer",
            "--topic",
            topic,
            "--table",
            f"{table}_ke",
            "--group",
            unique("g"),
            "kafka-engine-ddl",
            "--apply",
        ),  # fmt: skip
    ):
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "kafka_sasl_password = '******'" in printed.stdout
    assert "https://cdfbridge:******@127.0.0.1" in printed.stdout
    wait_until(lambda: current_rows(client, f"{table}_ke") == expected, "the Kafka engine's rows")

    # 3. rebuild and reset-offsets, with the consumer stopped.
    for done in (
        secured.run("consumer", "--topic", topic, "rebuild"),
        secured.run("consumer", "--topic", topic, "reset-offsets", "--to-earliest"),
    ):
        assert done.returncode == 0, done.stderr[-3000:]
    assert current_rows(client, table) == expected

    # 4. No secret anywhere: outputs, --help, /metrics, DLQ headers, and what ClickHouse keeps.
    helps = [
        secured.run(module, *command, "--help").stdout
        for module, commands in COMMANDS.items()
        for command in commands
    ]
    assert all(helps)
    # The passwords searched for are those the commands were given.
    given = [
        secured.env[f"CDFBRIDGE_{name}"]
        for name in ("KAFKA__SASL_PASSWORD", "CLICKHOUSE__PASSWORD")
    ]
    assert len(secured.leaks(given)) == 2
    header_texts = [f"{key}={value!r}" for key, value in headers]
    kept = clickhouse_texts(client, table)
    assert secured.leaks([*secured.outputs, *helps, *pages, *header_texts, *kept]) == []
    # ... where each would be, had ClickHouse not masked it: the checks above saw them.
    assert any("kafka_sasl_password = '[HIDDEN]'" in text for text in kept), kept
    assert any("cdfbridge:[HIDDEN]@127.0.0.1" in text for text in kept), kept


def clickhouse_texts(client: Any, table: str) -> list[str]:
    """Every query, its settings and its error in system.query_log, and the tables' DDL."""
    client.command("SYSTEM FLUSH LOGS")
    logged = client.query(
        "SELECT query, toString(Settings), exception FROM system.query_log "
        "WHERE event_date >= yesterday()"
    ).result_rows
    ddl = client.query(
        "SELECT create_table_query FROM system.tables WHERE database = currentDatabase()"
    ).result_rows
    shown = client.command(f"SHOW CREATE TABLE `{table}_ke_kafka`")
    return [" ".join(row) for row in logged] + [row[0] for row in ddl] + [str(shown)]


REFUSALS: dict[str, tuple[dict[str, str], str, str]] = {
    "kafka password": ({"CDFBRIDGE_KAFKA__SASL_PASSWORD": "wrong"}, "status", "SASL_PASSWORD"),
    "registry password": (
        {"CDFBRIDGE_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO": "cdfbridge:wrong"},
        "kafka-engine-ddl",
        "CDFBRIDGE_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO",
    ),
    "clickhouse password": (
        {"CDFBRIDGE_CLICKHOUSE__PASSWORD": "wrong"},
        "status",
        "CDFBRIDGE_CLICKHOUSE__USERNAME and __PASSWORD",
    ),
    "kafka host": (
        {"CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS": "localhost:{kafka_port}"},
        "status",
        "CDFBRIDGE_KAFKA__SSL_CA_LOCATION",
    ),
    "registry host": (
        {"CDFBRIDGE_SCHEMA_REGISTRY__URL": "https://localhost:{registry_port}/apis/ccompat/v7"},
        "kafka-engine-ddl",
        "CDFBRIDGE_SCHEMA_REGISTRY__SSL_CA_LOCATION",
    ),
    "clickhouse host": (
        {"CDFBRIDGE_CLICKHOUSE__URL": "https://localhost:{clickhouse_port}"},
        "status",
        "CDFBRIDGE_CLICKHOUSE__SSL_CA_LOCATION",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_refused_credentials_and_foreign_certificates_exit_2_naming_the_setting(
    secured: Secured, published: tuple[str, str, int], case: str
) -> None:
    """The certificate names 127.0.0.1 alone: reached as localhost, it must not verify."""
    changes, command, setting = REFUSALS[case]
    ports = {
        "kafka_port": secured.settings.kafka_port,
        "registry_port": secured.settings.registry_https_port,
        "clickhouse_port": secured.settings.clickhouse_https_port,
    }
    env = {key: value.format(**ports) for key, value in changes.items()}
    done = secured.run("consumer", "--topic", published[1], command, env=env, timeout_s=120)
    message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    assert done.returncode == 2, done.stderr[-3000:]
    assert message.startswith("cdfbridge-consumer: ") and setting in message, message
    assert "Traceback" not in done.stderr
    assert secured.leaks([done.stdout, done.stderr]) == []


def test_tls_verification_turned_off_on_purpose_warns(
    secured: Secured, published: tuple[str, str, int]
) -> None:
    url = f"https://localhost:{secured.settings.clickhouse_https_port}"
    env = {"CDFBRIDGE_CLICKHOUSE__URL": url, "CDFBRIDGE_CLICKHOUSE__TLS_VERIFY": "false"}
    done = secured.run("consumer", "--topic", published[1], "status", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "TLS certificate verification is OFF for clickhouse" in done.stderr


def test_default_user_reads_no_table(secured: Secured, published: tuple[str, str, int]) -> None:
    """The server's own passwordless `default` keeps only what its launcher needs."""
    import clickhouse_connect
    from clickhouse_connect.driver.exceptions import DatabaseError

    plain = clickhouse_connect.get_client(dsn=secured.settings.clickhouse_plain_url)
    with pytest.raises(DatabaseError) as refused:
        plain.query(f"SELECT count() FROM `{published[1]}`")
    assert getattr(refused.value, "code", None) == 497  # ACCESS_DENIED


def test_secured_stack_files_are_private(secured: Secured) -> None:
    secrets = Path(secured.settings.home) / "secrets"
    assert secrets.stat().st_mode & 0o077 == 0
    assert all(p.stat().st_mode & 0o077 == 0 for p in secrets.iterdir())
