"""Fixtures for the browser tests: a fresh page per test (the browser is in tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _new_page(browser, scale: int):
    context = browser.new_context(
        viewport={"width": 1000, "height": 800}, device_scale_factor=scale
    )
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
    page.set_default_timeout(15_000)
    return context, page


@pytest.fixture
def page(browser):
    context, page = _new_page(browser, 1)
    yield page
    context.close()


@pytest.fixture
def hidpi_page(browser):
    context, page = _new_page(browser, 2)
    yield page
    context.close()


@pytest.fixture
def offline_page(page):
    """A page where every request but the file itself is refused and recorded."""
    page.refused = []

    def refuse(route):
        page.refused.append(route.request.url)
        route.abort()

    page.route(lambda url: not url.startswith("file://"), refuse)
    return page


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory):
    """One real JupyterLab server for the session (started on first use): a ``JupyterLab``."""
    from lab_server import JupyterLab

    lab = JupyterLab(tmp_path_factory.mktemp("jupyterlab"))
    try:
        yield lab
    finally:
        lab.stop()
