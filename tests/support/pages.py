"""Browser tests' pages: Debian's Chromium, screenshots, script errors, a mark against reloads.

The fixtures over these (`chromium`, `serve`, `page`, `screen`) are in tests/web/conftest.py.
"""

import re

from tests.support.paths import ROOT

ARTIFACTS = ROOT / "build" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# The README's screenshot's size.
SCREEN = {"width": 1400, "height": 900}
# A wall screen's.
WALL = {"width": 1600, "height": 1000}
# A phone's, held upright.
PHONE = {"width": 390, "height": 844}


def open_page(chromium, request, viewport):
    """A fresh page of `viewport`'s size; script errors and dialogs are recorded, and a
    screenshot is saved."""
    context = chromium.new_context(viewport=viewport)
    tab = context.new_page()
    tab.script_errors, tab.dialogs = [], []
    tab.on("pageerror", lambda error: tab.script_errors.append(error))
    tab.on("dialog", lambda dialog: (tab.dialogs.append(dialog.message), dialog.dismiss()))
    yield tab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    tab.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    context.close()
    assert not tab.script_errors, f"script errors on the page: {tab.script_errors}"


def mark_page(tab):
    """A mark that a reload would wipe out."""
    tab.evaluate("window.wmonTestMark = 'not reloaded'")


def assert_not_reloaded(tab):
    assert tab.evaluate("window.wmonTestMark") == "not reloaded"
