"""The configuration page is generated from the settings models (docs/hooks/configuration.py):
every setting has a meaning there, and every env var a command reads is on it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from consumer.settings import ConsumerSettings
from producer.settings import ProducerSettings
from services.settings import env_vars
from verify.settings import VerifySettings

HOOK = Path(__file__).parents[2] / "docs" / "hooks" / "configuration.py"


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("configuration_reference", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_setting_says_what_it_means() -> None:
    missing = _hook().undocumented()
    assert not missing, (
        f"settings without a meaning: {', '.join(missing)}; give each an attribute docstring "
        "(a string literal on the line after the field)"
    )


def test_every_env_var_a_command_reads_is_on_the_page() -> None:
    page = _hook().reference()
    for model in (ProducerSettings, ConsumerSettings, VerifySettings):
        absent = [name for name in env_vars(model) if f"`{name}`" not in page]
        # [[tables]] is a list of entries, read from the config file only
        assert absent == ["CDFBRIDGE_TABLES"], f"{model.__name__}: not on the page: {absent}"


def test_every_table_is_in_a_block_that_keeps_names_whole() -> None:
    """The site's CSS keeps code whole only inside `settings` blocks
    (docs/stylesheets/settings.css); tests/docs measures it in a browser."""
    hook = _hook()
    page = hook.reference()
    blocks = page.count('<div class="settings" markdown>')
    assert blocks == page.count("|---|---|") == len(hook.sections())
