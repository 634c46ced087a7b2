"""Debian's chromium driven by Playwright, as TESTING.md says (never Playwright's own download)."""

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
            f"no chromium at {CHROMIUM}: apt-get install chromium (bash .ci/run does)"
        )
    return CHROMIUM


def launch_chromium(playwright):
    """A headless chromium from a running ``sync_playwright()``."""
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, chromium_sandbox=False, args=CHROMIUM_ARGS
    )
