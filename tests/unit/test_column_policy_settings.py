"""The column policy's settings: the same lists from flags and env vars for the producer and
cdfbridge-verify, and policies that can never be right refused before anything starts."""

from typing import Any

import pytest

from producer.cli import main as producer_main
from producer.cli import parser as producer_parser
from producer.cli import settings_from as producer_settings
from schemas.column_policy import ColumnPolicy
from verify.cli import main as verify_main
from verify.cli import parser as verify_parser
from verify.cli import settings_from as verify_settings

PRODUCER = ["--table", "/data/people", "--primary-key", "id"]
VERIFY = ["--table", "/data/people"]


def test_producer_flags_give_the_policy_as_lists() -> None:
    args = producer_parser().parse_args(
        [*PRODUCER, "--exclude-columns", "ssn, notes", "--hash-columns", "email"]
    )

    source = producer_settings(args).source

    assert (source.exclude_columns, source.hash_columns) == (["ssn", "notes"], ["email"])


def test_verify_flags_give_the_same_policy() -> None:
    args = verify_parser().parse_args(
        [*VERIFY, "--exclude-columns", "ssn,notes", "--hash-columns", "email,phone"]
    )

    policy = verify_settings(args).verify.column_policy

    assert policy == ColumnPolicy.of(["ssn", "notes"], ["email", "phone"])


@pytest.mark.parametrize(
    ("prefix", "settings_of", "argv"),
    [
        ("CDFBRIDGE_SOURCE", lambda a: producer_settings(a).source, PRODUCER),
        ("CDFBRIDGE_VERIFY", lambda a: verify_settings(a).verify, VERIFY),
    ],
    ids=["producer", "verify"],
)
def test_env_vars_give_the_policy_as_comma_lists(
    prefix: str, settings_of: Any, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(f"{prefix}__EXCLUDE_COLUMNS", "ssn,notes")
    monkeypatch.setenv(f"{prefix}__HASH_COLUMNS", "email")
    parse = producer_parser if prefix == "CDFBRIDGE_SOURCE" else verify_parser

    section = settings_of(parse().parse_args(argv))

    assert (section.exclude_columns, section.hash_columns) == (["ssn", "notes"], ["email"])


@pytest.mark.parametrize(
    ("main", "argv"), [(producer_main, PRODUCER), (verify_main, VERIFY)], ids=["producer", "verify"]
)
@pytest.mark.parametrize(
    ("policy", "named"),
    [
        (["--exclude-columns", "email", "--hash-columns", "email"], "both excluded and hashed"),
        (["--hash-columns", "id", "--primary-key", "id"], "primary-key columns ['id'] cannot be"),
    ],
    ids=["both", "key"],
)
def test_a_column_both_left_out_and_hashed_or_a_key_column_is_refused_with_exit_2(
    main: Any,
    argv: list[str],
    policy: list[str],
    named: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main([*argv, *policy])

    assert code == 2
    assert named in capsys.readouterr().err


@pytest.mark.parametrize("main", [producer_main, verify_main], ids=["producer", "verify"])
def test_help_lists_the_policy_flags(main: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])

    text = capsys.readouterr().out
    assert "--exclude-columns COL[,COL]" in text
    assert "--hash-columns COL[,COL]" in text
    assert "__EXCLUDE_COLUMNS" in text and "__HASH_COLUMNS" in text
