"""The built documentation site: its reference covers every public name, and a notebook page's
widgets draw and answer in headless Chromium with no kernel and no network.

Run by ``bash .ci/docs.sh`` (``-m docs``) on the site it has just built with
``mkdocs build --strict`` (``MURANO_DOCS_SITE``); without that variable the site is built here,
into a temporary folder (the notebooks' executed copies are reused from ``.cache/``). Pages are
served from the folder by Playwright's request interception: every request outside the site's
origin is refused and recorded, and a page that made one fails, but for the notebooks' "Open in
Colab" badge, an image on colab.research.google.com that is a link out in any case.
"""

from __future__ import annotations

import mimetypes
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from chromium import console_problems, launch_chromium, new_page

pytestmark = [pytest.mark.docs, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
ORIGIN = "http://docs.test"
ARTIFACTS = ROOT / "tests" / "_artifacts" / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    given = os.environ.get("MURANO_DOCS_SITE")
    if given:
        path = Path(given)
        assert (path / "index.html").is_file(), f"MURANO_DOCS_SITE={given} holds no built site"
        return path
    path = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(path)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-6000:]}"
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


def _inventory(site: Path) -> set[str]:
    """The object names of the site's ``objects.inv`` (Sphinx's inventory, version 2)."""
    data = (site / "objects.inv").read_bytes()
    header, _, body = data.partition(b"\n# The remainder of this file is compressed using zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2"), header[:60]
    lines = zlib.decompress(body).decode("utf-8").splitlines()
    return {line.split(" ", 1)[0] for line in lines if line.strip()}


def test_the_built_reference_has_every_public_name(site):
    import murano_widgets

    names = _inventory(site)
    assert "murano_widgets.LogitLens" in names, sorted(names)[:20]
    missing = [name for name in murano_widgets.__all__ if f"murano_widgets.{name}" not in names]
    assert not missing, f"no reference entry in the built site for {missing}"


def _open(browser, site: Path, url: str, *, dark: bool = False):
    context, page = new_page(browser, width=1400, height=1000)
    page.blocked = []

    def handle(route):
        request_url = route.request.url
        if request_url.startswith(ORIGIN):
            path = request_url[len(ORIGIN) :].split("?")[0].split("#")[0].lstrip("/")
            file = site / path
            if file.is_dir():
                file = file / "index.html"
            if file.is_file():
                kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
                route.fulfill(status=200, content_type=kind, body=file.read_bytes())
                return
        page.blocked.append(request_url)
        route.abort()

    page.route("**/*", handle)
    if dark:
        page.emulate_media(color_scheme="dark")
    page.goto(f"{ORIGIN}/{url}")
    return context, page


def _problems(page) -> list[str]:
    return console_problems(page)


def _network(page) -> list[str]:
    return list(page.blocked)


CANVAS_PIXELS = """(el) => {
  const canvas = el.querySelector("canvas.murano-canvas") || el.querySelector("canvas");
  const { width, height } = canvas;
  const data = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  const colours = new Set();
  for (let i = 0; i < data.length; i += 4) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  let hash = 0;
  for (let i = 0; i < data.length; i += 97) hash = (hash * 31 + data[i]) | 0;
  return { width, height, colours: colours.size, hash };
}"""

FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def test_a_notebook_page_draws_its_widgets_and_they_answer_the_layer_slider(browser, site):
    context, page = _open(browser, site, "notebooks/01_logit_lens_tour/")
    try:
        page.wait_for_function("window.muranoWidgetsReady === true")
        outputs = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
        drawn = page.evaluate("(window.muranoWidgets || []).length")
        assert outputs >= 3 and drawn == outputs, (outputs, drawn)
        notes = page.locator(".murano-notebook-note").all_inner_texts()
        assert not notes, notes  # no output said it could not be drawn

        # The first heatmap: drawn from the saved state, tokens and all.
        widget = page.locator(".murano-notebook-widget").first
        widget.scroll_into_view_if_needed()
        page.evaluate(FRAMES)
        before = widget.evaluate(CANVAS_PIXELS)
        assert before["width"] > 100 and before["colours"] >= 8, before
        # It fits the page's column (the notebook's stylesheet made it spill over once).
        spill = widget.evaluate(
            "(el) => el.querySelector('.murano-root').getBoundingClientRect().width"
            " - el.closest('.jp-OutputArea-output').clientWidth"
        )
        assert spill <= 1, f"the widget is {spill} px wider than its output"
        state = widget.evaluate("(el) => el.__muranoDebug.state")
        model = page.evaluate("() => window.muranoWidgets[0].model.get('layer')")
        assert state["modelLayer"] == model, (state, model)

        # The layer slider moves the highlighted row: the view's row, the model's trait and
        # the pixels all change.
        slider = widget.locator(".murano-layer-control .murano-slider")
        slider.focus()
        page.keyboard.press("Home" if state["layer"] > 0 else "End")
        page.evaluate(FRAMES)
        after = widget.evaluate("(el) => el.__muranoDebug.state")
        assert after["layer"] != state["layer"], (state, after)
        layer = page.evaluate("() => window.muranoWidgets[0].model.get('layer')")
        assert layer == after["modelLayer"] != model, (layer, after, model)
        assert widget.evaluate(CANVAS_PIXELS)["hash"] != before["hash"]

        # A cell's tooltip has its details: they were saved with the notebook.
        x, y = widget.evaluate(
            "(el) => { const r = el.__muranoDebug.cellClientRect(0, 0);"
            " return [r.x + r.w / 2, r.y + r.h / 2]; }"
        )
        page.mouse.move(x, y)
        tooltip = widget.locator(".murano-tooltip")
        tooltip.wait_for(state="visible")
        assert "Waiting for the kernel" not in tooltip.inner_text(), tooltip.inner_text()

        assert not _problems(page), _problems(page)
        assert not _network(page), f"the page asked the network for {_network(page)}"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        widget.screenshot(path=str(ARTIFACTS / "notebook-01-widget.png"))
    finally:
        context.close()


@pytest.mark.parametrize(
    "url",
    [
        "notebooks/04_when_does_it_know/",  # the data-set widget: a box of a chart and a heatmap
        "notebooks/05_compare_and_generate/",  # the lens-diff widget
    ],
)
def test_every_notebook_widget_draws_offline(browser, site, url):
    context, page = _open(browser, site, url, dark=True)
    try:
        page.wait_for_function("window.muranoWidgetsReady === true")
        notes = page.locator(".murano-notebook-note").all_inner_texts()
        assert not notes, notes
        drawn = page.evaluate("(window.muranoWidgets || []).length")
        assert drawn >= 2, drawn
        assert page.locator(".murano-notebook-widget canvas, .murano-notebook-widget svg").count()
        assert not _problems(page), _problems(page)
        assert not _network(page), f"the page asked the network for {_network(page)}"
        name = url.strip("/").replace("/", "-")
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
    finally:
        context.close()


@pytest.mark.parametrize("url", ["", "quickstart/", "guides/lenses/", "reference/widgets/"])
def test_pages_load_offline(browser, site, url):
    context, page = _open(browser, site, url)
    try:
        page.wait_for_load_state("load")
        assert page.locator("article h1").count() == 1
        assert not _problems(page), _problems(page)
        assert not _network(page), f"{url or 'index'} asked the network for {_network(page)}"
    finally:
        context.close()
