"""The site documents the checkout it is built from: this mkdocs hook puts the checkout's
packages first on the import path, ahead of an editable install of another checkout that
shares the Python environment (a git worktree's, say), so the configuration page and the
site's own files come from the code beside mkdocs.yml."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def on_config(config: Any) -> Any:
    root = str(Path(config.config_file_path).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return config
