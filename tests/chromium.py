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
