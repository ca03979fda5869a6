"""What `cdfbridge-producer` says about bad settings, before anything starts."""

import pytest

from producer.cli import main


def test_invalid_setting_is_named_with_exit_2_and_no_secret_beside_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CDFBRIDGE_KAFKA__SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("CDFBRIDGE_KAFKA__SASL_PASSWORD", "kafka-pass-4711")
    monkeypatch.setenv("CDFBRIDGE_SCHEMA_REGISTRY__BASIC_AUTH_USER_INFO", "me:registry-pass-4711")

    code = main(["--table", "/data/t", "--primary-key", "id", "--max-bytes-per-chunk", "0"])

    assert code == 2
    message = capsys.readouterr().err
    assert "max_bytes_per_chunk" in message
    assert "4711" not in message


def test_help_lists_every_env_var_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])

    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "CDFBRIDGE_SOURCE__MAX_BYTES_PER_CHUNK" in text
    assert "CDFBRIDGE_KAFKA__SASL_PASSWORD" in text
    assert "CDFBRIDGE_STORAGE__SECRET_ACCESS_KEY" in text
    assert "4  fenced" in text
