"""A table's catch-up shown on a terminal, as its chunks are published."""

from __future__ import annotations

import sys


class ProgressBar:
    """A one-line catch-up indicator on a terminal; silent in containers and CI."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def show(self, published: int, head: int, rows: int) -> None:
        if self.enabled:
            sys.stderr.write(f"\rcatching up: version {published}/{head}, {rows:,} rows published ")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
