"""schemas/ is the event contract alone: it reaches no service and no stage, whatever the
import's place (in a function, under TYPE_CHECKING). And no module of the product grows
past what one reads at a sitting."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
FORBIDDEN = {"pyspark", "py4j", "clickhouse_connect", "confluent_kafka", "httpx"}
FORBIDDEN |= {"services", "producer", "consumer", "verify", "stack"}
PRODUCT = ("producer", "consumer", "schemas", "services", "verify")
MAX_LINES = 220


def _imported(path: Path) -> set[str]:
    """The top-level modules path imports, relative imports left out."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_schemas_imports_no_service_client_and_no_stage() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "schemas").glob("*.py"))
        for name in sorted(_imported(path) & FORBIDDEN)
    ]
    assert not offenders, "schemas/ is the contract alone: " + "; ".join(offenders)


def test_no_module_of_the_product_is_longer_than_max_lines() -> None:
    lengths = {
        path.relative_to(ROOT): len(path.read_text().splitlines())
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
    }
    long = [f"{path} ({lines})" for path, lines in sorted(lengths.items()) if lines > MAX_LINES]
    assert not long, f"over {MAX_LINES} lines, split along a seam: {', '.join(long)}"
