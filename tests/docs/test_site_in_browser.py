"""What a reader sees of the docs site in a browser: setting names, env vars and defaults
whole on the configuration page, the home page's diagram drawn and within the window, and
no page with a JavaScript error."""

from __future__ import annotations

from typing import Any

import pytest

PAGES = ("", "configuration/", "performance/")
# Each cell's code element: its text, its height and its line's height, in CSS pixels.
CODE_CELLS = """
return [...document.querySelectorAll("article td code")].map((code) => [
  code.textContent, code.getBoundingClientRect().height,
  parseFloat(getComputedStyle(code).lineHeight),
]);
"""
DRAWN_S = 30  # Mermaid draws after the page has loaded


def open_page(browser: Any, url: str, width: int) -> list[str]:
    """Load url at width; the SEVERE messages of the browser's console meanwhile."""
    browser.get_log("browser")  # what an earlier page left
    browser.set_window_size(width, 900)
    browser.get(url)
    browser.find_element("css selector", "article")
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def diagram(browser: Any) -> Any:
    """The home page's first Mermaid drawing: the svg in material's (closed) shadow root."""
    from selenium.webdriver.support.ui import WebDriverWait

    def drawn(driver: Any) -> Any:
        hosts = driver.find_elements("css selector", "div.mermaid")
        svgs = hosts[0].shadow_root.find_elements("css selector", "svg") if hosts else []
        return svgs[0] if svgs else False

    return WebDriverWait(browser, DRAWN_S).until(drawn, "no Mermaid diagram drawn (an svg)")


@pytest.mark.browser
@pytest.mark.parametrize("width", [1024, 1600])
def test_configuration_tables_keep_names_whole(browser: Any, site_url: str, width: int) -> None:
    assert not open_page(browser, site_url + "configuration/", width)
    cells = browser.execute_script(CODE_CELLS)
    assert len(cells) > 100, f"the configuration tables hold {len(cells)} code cells"
    broken = [
        f"{text} ({height:.1f} px, a line {line:.1f} px)"
        for text, height, line in cells
        if height > line + 0.5
    ]
    assert not broken, f"at {width} px, code broken over lines: {', '.join(broken)}"


@pytest.mark.browser
def test_home_diagram_is_drawn_within_the_window(browser: Any, site_url: str) -> None:
    assert not open_page(browser, site_url, 1024)
    svg = diagram(browser)
    left, right, window = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.left, r.right, innerWidth];",
        svg,
    )
    assert 0 <= left and right <= window, f"the diagram spans {left}-{right} px of {window}"


@pytest.mark.browser
@pytest.mark.parametrize("page", PAGES)
def test_page_logs_no_javascript_error(browser: Any, site_url: str, page: str) -> None:
    errors = open_page(browser, site_url + page, 1024)
    if page == "":
        diagram(browser)
        errors += [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, f"{page or 'home'}: {errors}"
