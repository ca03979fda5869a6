"""Every command maps errors to exit codes through one function (services/cli.py): 2 for
settings, 3 when a service did not answer, 1 for anything else that needs a fix; a fatal
Kafka error is never taken for a service that did not answer."""

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from consumer import cli as consumer_cli
from consumer import commands as consumer_commands
from consumer.group.errors import CommitRefusedError, KafkaFatalError, RegistryUnavailableError
from producer.errors import FencedError
from schemas.errors import ConfigError, TerminalError
from services.cli import run_command
from services.registry_errors import RegistryUrlError

E = KafkaError


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError("bad setting"), 2),
        (RegistryUrlError("http://registry:8080"), 2),
        (RegistryUnavailableError("registry down"), 3),
        (CommitRefusedError("t", "offset 1 of partition 0", "GROUP_AUTHORIZATION_FAILED"), 1),
        (KafkaFatalError("_FATAL: gap"), 1),
        (TerminalError("the table needs a fix"), 1),
        (FencedError("cdfbridge-t"), 4),  # the producer's own code, given to run_command
        (KafkaException(E(E._FATAL, "fatal idempotence error", fatal=True)), 1),
        (KafkaException(E(E.REBALANCE_IN_PROGRESS, fatal=True)), 1),
        (KafkaException(E(E._TRANSPORT)), 3),
        (KafkaException(E(E.UNKNOWN_TOPIC_OR_PART, retriable=True)), 3),
        (KafkaException(E(E.TOPIC_AUTHORIZATION_FAILED)), 1),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_errors_map_to_the_documented_exit_codes(
    error: Exception, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    def command(_: Any) -> int:
        raise error

    assert run_command("prog", lambda: None, command, [(FencedError, 4)]) == code
    assert capsys.readouterr().err.startswith("prog: ")


@pytest.mark.parametrize(
    "error",
    [ConfigError("invalid consumer settings: batch_rows"), ValueError("x"), OSError("no file")],
)
def test_settings_that_cannot_be_read_exit_2(error: Exception) -> None:
    def settings() -> Any:
        raise error

    assert run_command("prog", settings, lambda _: 0) == 2


def command_raising(error: Exception) -> Callable[..., int]:
    def command(settings: Any, args: Any) -> int:
        raise error

    return command


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (KafkaException(E(E._FATAL, "fatal consumer error", fatal=True)), 1),
        (KafkaException(E(E._TRANSPORT)), 3),
        (ConfigError("refused"), 2),
    ],
    ids=["fatal-kafka", "transport", "config"],
)
def test_the_consumer_command_uses_the_same_mapping(
    error: Exception, code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(consumer_commands.COMMANDS, "status", command_raising(error))

    assert consumer_cli.main(["--topic", "cdfbridge.orders", "status"]) == code
    assert capsys.readouterr().err.startswith("cdfbridge-consumer: ")


def test_invalid_consumer_settings_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__BATCH_ROWS", "-5")

    assert consumer_cli.main(["--topic", "cdfbridge.orders", "status"]) == 2
    assert "batch_rows" in capsys.readouterr().err
