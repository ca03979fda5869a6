"""Mermaid's browser script, from npm, for the documentation site's diagrams: the site
serves its own copy (docs/hooks/mermaid.py), so a page draws its diagrams with no network.
`cdfbridge-stack fetch mermaid` (run by `make setup`) puts it at <lib>/mermaid/mermaid.min.js.
"""

from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path

from stack.errors import StackSetupError
from stack.settings import StackSettings
from stack.tools import installed, mark_installed, run_logged, tool

# mkdocs-material draws with Mermaid 11 (it would load mermaid@11 from a CDN).
PACKAGE = "mermaid@11.17.2"
MEMBER = "package/dist/mermaid.min.js"


def script(settings: StackSettings) -> Path:
    """Where `fetch mermaid` puts the script."""
    return settings.lib / "mermaid" / "mermaid.min.js"


def install(settings: StackSettings) -> Path:
    """`npm pack` the pinned package and keep its one browser script, once per version."""
    target = script(settings)
    if installed(target.parent, PACKAGE, target):
        return target
    npm = tool("npm", "install Node.js 18 or later with npm")
    target.parent.mkdir(parents=True, exist_ok=True)
    log = target.parent / "npm.log"
    with tempfile.TemporaryDirectory() as work:
        argv = [npm, "pack", "--silent", "--pack-destination", work, PACKAGE]
        run_logged(argv, log, f"npm pack {PACKAGE}")
        packed = sorted(Path(work).glob("mermaid-*.tgz"))
        if not packed:
            raise StackSetupError(f"npm pack {PACKAGE} left no tarball; see {log}")
        with tarfile.open(packed[-1]) as archive:
            member = archive.extractfile(MEMBER)
            if member is None:
                raise StackSetupError(f"{packed[-1].name} holds no {MEMBER}")
            partial = target.with_name("mermaid.min.js.partial")
            partial.write_bytes(member.read())
    partial.replace(target)
    mark_installed(target.parent, PACKAGE)
    return target
