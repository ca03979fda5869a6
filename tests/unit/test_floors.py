"""The floors of the code: `schemas/` and `services/` import no stage; the producer, the
consumer and verify stand side by side on them, none importing another."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("producer", "consumer", "verify")
FLOORS = {
    "schemas": set(STAGES) | {"services"},
    "services": set(STAGES),
    **{stage: {other for other in STAGES if other != stage} for stage in STAGES},
}


def _imported(path: Path) -> set[str]:
    """The top-level packages a module imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_a_package_imports_nothing_from_its_neighbours_or_the_floors_above(package: str) -> None:
    crossing = {
        str(path.relative_to(ROOT)): sorted(_imported(path) & FLOORS[package])
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert {path: found for path, found in crossing.items() if found} == {}
