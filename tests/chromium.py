"""Debian's chromium driven by Playwright (never Playwright's own download, which fetches a
browser build from outside the package registries).

`bash .ci/test` installs it (`apt-get install chromium`); elsewhere point ``MURANO_CHROMIUM`` at
any Chromium or Chrome binary. `pytest -m "not browser"` runs everything that needs no browser.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM = os.environ.get("MURANO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    """The browser's path; fails loudly when it is missing (a skip would hide a broken widget)."""
    if not Path(CHROMIUM).exists() and not shutil.which(CHROMIUM):
        raise RuntimeError(
            f"no chromium at {CHROMIUM}: run `bash .ci/test` (it installs Debian's chromium), "
            "set MURANO_CHROMIUM to a Chromium binary, or skip these tests with "
            "`pytest -m 'not browser'`"
        )
    return CHROMIUM


def launch_chromium(playwright):
    """A headless chromium from a running ``sync_playwright()``."""
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, chromium_sandbox=False, args=CHROMIUM_ARGS
    )


# Every page made by `new_page` in the running test: the browser tests' autouse fixture
# (tests/browser/conftest.py) fails a test whose pages logged a warning or an error.
PAGES: list = []


def watch_console(page) -> None:
    """Records what ``page`` logs: ``page.errors`` (uncaught errors and console errors) and
    ``page.warnings`` (console warnings, such as anywidget's deprecation notice)."""
    page.errors = []
    page.warnings = []

    def on_console(msg) -> None:
        if msg.type not in ("error", "warning"):
            return
        where = msg.location.get("url", "") if msg.location else ""
        text = (
            f"{msg.text} ({where})" if where and "Failed to load resource" in msg.text else msg.text
        )
        (page.errors if msg.type == "error" else page.warnings).append(text)

    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", on_console)


def new_page(browser, *, width: int = 1000, height: int = 800, scale: int = 1, timeout=15_000):
    """A fresh context and page whose console is watched (`watch_console`); returns both."""
    context = browser.new_context(
        viewport={"width": width, "height": height}, device_scale_factor=scale
    )
    page = context.new_page()
    watch_console(page)
    page.set_default_timeout(timeout)
    PAGES.append(page)
    return context, page


# What the tests themselves make the browser log: the test page's missing favicon, and
# Chromium's advice after the tests read canvas pixels back (the widgets never call
# getImageData).
TEST_NOISE = (
    lambda m: "favicon" in m and "404" in m,
    lambda m: "willReadFrequently" in m,
)


def console_problems(page) -> list[str]:
    """What a page logged that a widget must never log (less `TEST_NOISE`)."""
    return [m for m in [*page.errors, *page.warnings] if not any(f(m) for f in TEST_NOISE)]
