"""What the console tests share: the accessibility check, screenshots for docs/console.md, forms."""

from __future__ import annotations

import os
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe  # type: ignore[import-untyped]  # no py.typed
from playwright.sync_api import Page

_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = (
    _ROOT / "docs" / "console"
    if os.environ.get("STRATA_UPDATE_SCREENSHOTS") == "1"
    else _ROOT / ".cache" / "console-screenshots"
)
"""Where the test run writes each view's screenshot: docs/console (which docs/console.md shows) only
when asked (``make screenshots``), so a test run leaves the tree as it found it."""

BLOCKING = frozenset({"serious", "critical"})
_AXE = Axe()


def accessible(page: Page) -> None:
    """Run axe-core (bundled with axe-playwright-python, nothing downloaded) on the page; fail on any
    serious or critical violation, naming the rule and the elements."""
    results = _AXE.run(page)
    blocking = [v for v in results.response["violations"] if v["impact"] in BLOCKING]
    details = [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]}" for v in blocking]
    assert not blocking, f"axe-core on {page.url}: " + "; ".join(details)


def screenshot(page: Page, name: str) -> None:
    """Save the full page as <SCREENSHOTS>/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def form_token(page: Page) -> str:
    """The one-time form token of the page shown."""
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    assert token
    return token
