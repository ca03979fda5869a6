"""The configuration reference, generated from the settings models at every docs build.

Each setting's meaning is its attribute docstring in the model (pydantic's
`use_attribute_docstrings`), so the page cannot drift from the code, and
tests/unit/test_config_reference.py fails when a setting has none.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

PAGE = "configuration.md"
# Every command's model holds the shared connection sections; the producer never reaches
# ClickHouse, so the page does not send its users there.
UNREAD = {("cdfbridge-producer", "clickhouse")}
INTRO = """# Configuration

Every command reads one typed settings model, validated before anything starts: a bad value
stops it with exit 2 and a message naming the setting. Values come from, highest first:

1. command-line flags (`--help` lists each command's);
2. the TOML file given with `--config` (one file can serve every command: each reads its own
   sections and ignores the others');
3. environment variables: `CDFBRIDGE_<SECTION>__<SETTING>`, e.g.
   `CDFBRIDGE_KAFKA__BOOTSTRAP_SERVERS`; a dict or list setting takes JSON;
4. the defaults below.

Secrets (type `secret`) are never printed, logged or shown in errors. `[[tables]]` entries
exist only in the config file. This page is generated from the settings models
(`docs/hooks/configuration.py`).
"""


class Section(NamedTuple):
    name: str  # as in the TOML file: `kafka`, or `[tables]` for the list of entries
    model: type[BaseModel]
    prefix: str  # of its env vars; "" for a section only the config file has
    commands: tuple[str, ...]


def sections() -> list[Section]:
    """Every section, once, with the commands that read it, in a reader's order."""
    from consumer.settings import ConsumerSettings
    from producer.settings import ProducerSettings
    from stack.settings import StackSettings
    from verify.settings import VerifySettings

    found: dict[str, Section] = {}
    for command, model in (
        ("cdfbridge-producer", ProducerSettings),
        ("cdfbridge-consumer", ConsumerSettings),
        ("cdfbridge-verify", VerifySettings),
    ):
        prefix = str(model.model_config.get("env_prefix", ""))
        for name, info in model.model_fields.items():
            section_model, listed = _section_model(info.annotation)
            if section_model is None or (command, name) in UNREAD:
                continue
            key = f"[{name}]" if listed else name
            earlier = found.get(key)
            commands = (earlier.commands if earlier else ()) + (command,)
            env = "" if listed else f"{prefix}{name.upper()}__"
            found[key] = Section(key, section_model, env, commands)
    stack = Section("stack", StackSettings, "CDFBRIDGE_STACK_", ("cdfbridge-stack",))
    return [*found.values(), stack]


def undocumented() -> list[str]:
    """`section.setting` of every setting without a meaning."""
    return [
        f"{section.name}.{name}"
        for section in sections()
        for name, info in section.model.model_fields.items()
        if not _meaning(info)
    ]


def reference() -> str:
    return INTRO + "".join(_section(section) for section in sections())


def _section(section: Section) -> str:
    commands = ", ".join(f"`{c}`" for c in section.commands)
    if section.name.startswith("["):
        title, where = f"`[{section.name}]` entries", "the config file only"
    elif section.name == "stack":
        title, where = "The local stack", "env vars only"
    else:
        title, where = f"`[{section.name}]`", f"`[{section.name}]` in the config file"
    doc = (section.model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    lines = [f"\n## {title}\n", f"\n{doc}\n" if doc else "", f"\nRead by {commands}; {where}.\n\n"]
    # In a block of its own, which the site's CSS styles (docs/stylesheets/settings.css).
    lines.append(f'<div class="settings" markdown>\n\n| {_heading(section)} | Meaning |\n')
    lines.append("|---|---|\n")
    for name, info in section.model.model_fields.items():
        # The name, env var, type and default one to a line, each kept whole.
        names = [f"**`{name}`**"]
        if section.prefix:
            names.append(f"`{section.prefix}{name.upper()}`")
        names.append(f"{_type(info.annotation)}, {_default(info)}")
        cells = ["<br>".join(names), _meaning(info)]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |\n")
    return "".join(lines) + "\n</div>\n"


def _heading(section: Section) -> str:
    return "Setting, env var, type, default" if section.prefix else "Key, type, default"


def _meaning(info: FieldInfo) -> str:
    return " ".join((info.description or "").split())


def _section_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The section model a settings field holds, and whether it is a list of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return item, True
    return None, False


def _type(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is SecretStr:
        return "secret"
    if origin is Annotated:
        return _type(args[0])
    if origin is Literal:
        return " | ".join(f"`{value}`" for value in args)
    if origin in (Union, types.UnionType):
        return " or ".join(_type(arg) for arg in args if arg is not type(None))
    if origin in (list, dict):
        return f"{origin.__name__} of {' → '.join(_type(arg) for arg in args)}"
    return str(getattr(annotation, "__name__", annotation))


def _default(info: FieldInfo) -> str:
    """How a setting's default reads after its type: `default 5`, `required`, `unset`."""
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
        return f"default `{value!r}`" if isinstance(value, list | dict) else "default: see meaning"
    value = info.default
    if value is None or value is PydanticUndefined:
        return "unset"
    if isinstance(value, SecretStr):
        return "unset" if not value.get_secret_value() else "default: hidden"
    if isinstance(value, Path):
        return f"default `{value}`"
    return f"default `{value!r}`" if isinstance(value, str) else f"default `{value}`"


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: the page joins the site's files, built from the models as they are."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=reference()))
    return files
