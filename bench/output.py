"""Where a benchmark's figures go: a printed table, JSON, and a small PNG chart, all under
bench/results/ (git-ignored)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table, numbers with thousands separators, for the terminal and the README."""
    cells = [[f"{c:,}" if isinstance(c, int) else str(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def save(name: str, data: Any, draw: Callable[[Any], None], title: str) -> tuple[Path, Path]:
    """Write `<name>.json` and `<name>.png`; `draw(axes)` fills the chart."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    RESULTS.mkdir(parents=True, exist_ok=True)
    json_path, png_path = RESULTS / f"{name}.json", RESULTS / f"{name}.png"
    json_path.write_text(json.dumps(data, indent=2, default=str))
    figure, axes = plt.subplots(figsize=(6, 3.2), dpi=100)
    draw(axes)
    axes.set_title(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(png_path)
    plt.close(figure)
    return json_path, png_path


def bars(labels: Sequence[str], values: Sequence[float], unit: str) -> Callable[[Any], None]:
    """A horizontal bar per label, its value written at the end of the bar."""

    def draw(axes: Any) -> None:
        positions = range(len(labels))
        axes.barh(positions, values, color="#4c72b0")
        axes.set_yticks(list(positions), labels, fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel(unit)
        for y, value in zip(positions, values, strict=True):
            axes.text(value, y, f" {value:,.0f}", va="center", fontsize=8)
        axes.margins(x=0.2)

    return draw
