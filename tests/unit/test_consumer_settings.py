"""Consumer settings: env vars, a TOML file and flags, validated at start-up."""

from pathlib import Path
from typing import Any

import pytest

from consumer.settings import ConsumerSettings, load
from schemas.errors import ConfigError
from services.settings import env_vars


def test_env_vars_fill_the_consumer_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__TOPIC", "cdfbridge.sales.orders")
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__BATCH_ROWS", "500")
    monkeypatch.setenv("CDFBRIDGE_CLICKHOUSE__PASSWORD", "s3cret")

    settings = load()

    assert settings.consumer.batch_rows == 500
    assert settings.consumer.target_table == "sales_orders"
    assert "s3cret" not in repr(settings)


def test_flags_override_the_file_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__GROUP", "from-env")
    config = tmp_path / "consumer.toml"
    config.write_text('[consumer]\ntopic = "from-file"\ngroup = "from-file"\n')

    settings = load(config, topic="from-flag")

    assert (settings.consumer.topic, settings.consumer.group) == ("from-flag", "from-file")


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({}, "no topic"),
        ({"topic": "t", "batch_rowz": 5}, "consumer.batch_rowz"),
        ({"topic": "t", "batch_rows": 0}, "consumer.batch_rows"),
    ],
)
def test_invalid_settings_fail_at_start_up_naming_the_key(
    overrides: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        load(**overrides)


def test_every_consumer_field_has_an_env_var() -> None:
    names = env_vars(ConsumerSettings)

    assert "CDFBRIDGE_CONSUMER__TOPIC" in names
    assert "CDFBRIDGE_CLICKHOUSE__PASSWORD" in names


def test_registry_requests_time_out_so_a_silent_registry_cannot_stall_a_stage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CDFBRIDGE_CONSUMER__TOPIC", "t")
    assert load().schema_registry.client_config()["timeout"] == 10.0

    monkeypatch.setenv("CDFBRIDGE_SCHEMA_REGISTRY__TIMEOUT_S", "2.5")
    assert load().schema_registry.client_config()["timeout"] == 2.5
