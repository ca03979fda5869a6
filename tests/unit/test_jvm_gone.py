"""A JVM that died answers py4j's pinned-thread client with the socket's own
ConnectionRefusedError, not a Py4JError: the checks that ask the JVM whether it still runs
must take that for "gone" rather than let it out as a traceback."""

import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from py4j.clientserver import ClientServer, JavaParameters, PythonParameters
from py4j.java_gateway import JavaObject

from services.spark_errors import context_stopped, jvm_gone


@pytest.fixture
def no_jvm() -> Iterator[Any]:
    """py4j's client as pyspark makes it, at a port where no JVM listens any more."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gateway = ClientServer(JavaParameters(port=port), PythonParameters(port=0))
    yield gateway
    gateway.shutdown()


def test_a_call_into_a_jvm_that_is_gone_raises_what_jvm_gone_names(no_jvm: Any) -> None:
    with pytest.raises(ConnectionRefusedError):
        no_jvm.jvm.java.lang.System.currentTimeMillis()
    try:
        no_jvm.jvm.java.lang.System.currentTimeMillis()
    except jvm_gone() as exc:
        assert isinstance(exc, ConnectionError)


def test_a_context_whose_jvm_is_gone_counts_as_stopped(no_jvm: Any) -> None:
    context = JavaObject("o1", no_jvm._gateway_client)  # the session's JavaSparkContext
    session: Any = SimpleNamespace(sparkContext=SimpleNamespace(_jsc=context))
    assert context_stopped(session) is True
