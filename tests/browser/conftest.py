"""Fixtures for the browser tests: a fresh page per test (the browser is in tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the item (``item.rep_call``), for ``quiet_console``."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(autouse=True)
def quiet_console(request):
    """Fails a test whose pages (made by ``chromium.new_page``) logged a warning or an error:
    no widget may write to the browser console (issue 21). A test that provokes an error on
    purpose empties ``page.errors`` after checking it."""
    from chromium import PAGES, console_problems

    PAGES.clear()
    yield
    logged = {id(page): console_problems(page) for page in PAGES}
    PAGES.clear()
    problems = [line for lines in logged.values() for line in lines]
    call = getattr(request.node, "rep_call", None)
    if problems and call is not None and call.passed:
        pytest.fail("the browser console got:\n" + "\n".join(problems[:20]), pytrace=False)


@pytest.fixture
def page(browser):
    from chromium import new_page

    context, page = new_page(browser)
    yield page
    context.close()


@pytest.fixture
def hidpi_page(browser):
    from chromium import new_page

    context, page = new_page(browser, scale=2)
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
