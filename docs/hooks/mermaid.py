"""The site serves its own copy of Mermaid, which draws its diagrams in the browser.

mkdocs-material loads Mermaid from a CDN unless a page has it already; mkdocs.yml lists
SCRIPT in `extra_javascript`, and this mkdocs hook adds the script that
`cdfbridge-stack fetch mermaid` (run by `make setup`) keeps in the stack's lib directory,
so a diagram draws with no network.
"""

from __future__ import annotations

from typing import Any

SCRIPT = "assets/javascripts/mermaid.min.js"


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    from stack.mermaid import script
    from stack.settings import StackSettings

    source = script(StackSettings())
    if not source.is_file():
        raise PluginError(
            f"Mermaid's script is not at {source}: run make setup "
            "(or cdfbridge-stack fetch mermaid) to fetch it for the site's diagrams"
        )
    files.append(File.generated(config, SCRIPT, abs_src_path=str(source)))
    return files
