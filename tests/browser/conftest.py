"""Fixtures for the browser tests: a fresh page per test (the browser is in tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


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
