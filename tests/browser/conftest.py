"""Fixtures for the browser tests: one headless Chromium per session, a fresh page per test."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

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


def launch_chromium(playwright):
    """Debian's chromium driven by Playwright (never Playwright's own browser download)."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, chromium_sandbox=False, args=CHROMIUM_ARGS
    )


@pytest.fixture(scope="session")
def browser():
    # A missing browser fails loudly: a skipped browser suite would hide a broken widget.
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium (bash .ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1000, "height": 800}, device_scale_factor=1)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def hidpi_page(browser):
    context = browser.new_context(viewport={"width": 1000, "height": 800}, device_scale_factor=2)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.set_default_timeout(15_000)
    yield page
    context.close()
