"""Starting a SparkSession, retried with back-off (services/retry.py) while its master cannot be
reached.

A standalone master that does not answer only fails SparkContext after about a minute of
Spark's own registration retries, so the master's address is probed first: a refused or
timed-out connection is known in milliseconds.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from services.retry import retrying
from services.service_errors import SparkUnavailableError
from services.spark_errors import first_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

STANDALONE_PORT = 7077
PROBE_TIMEOUT_S = 5.0
MAX_BACKOFF_S = 30.0


def start_with_retries(
    master: str, start: Callable[[], SparkSession], attempts: int
) -> SparkSession:
    """start() once master answers; SparkUnavailableError after attempts failed tries."""
    for attempt in retrying(
        f"Spark master {master}", max_backoff_s=MAX_BACKOFF_S, attempts=attempts
    ):
        with attempt:
            return _start(master, start, attempt.retry_state.attempt_number)
    raise AssertionError("retrying() raises the last error once the attempts are spent")


def _start(master: str, start: Callable[[], SparkSession], attempt: int) -> SparkSession:
    """One try: the master's failures to answer as SparkUnavailableError (transient)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        probe(master)
        return start()
    except (OSError, PySparkException, Py4JError) as exc:
        raise SparkUnavailableError(master, attempt, first_line(exc)) from exc


def probe(master: str) -> None:
    """Raise OSError unless one of master's addresses accepts a TCP connection.

    Only spark:// (standalone, possibly several hosts) and k8s:// masters have an address;
    local[*], yarn and the like are left to Spark.
    """
    addresses = master_addresses(master)
    errors = []
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
            return
        except OSError as exc:
            errors.append(f"{host}:{port}: {exc.strerror or exc}")
    if errors:
        raise ConnectionError("; ".join(errors))


def master_addresses(master: str) -> list[tuple[str, int]]:
    """(host, port) of each master named in the URL; empty when it names none."""
    if master.startswith("spark://"):
        hosts = master.removeprefix("spark://").split(",")
        return [_host_port(f"spark://{h}", STANDALONE_PORT) for h in hosts if h]
    if master.startswith("k8s://"):
        api = master.removeprefix("k8s://")
        return [_host_port(api if "://" in api else f"https://{api}", 443)]
    return []


def _host_port(url: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or default_port
