"""What a researcher meets in the live widget in a real JupyterLab, with a kernel and the demo
model (issue 35): a text of several tokens is refused with a message in the widget, nothing the
live controls show moves the heatmap under the pointer, and the patched diff follows the dark
theme and the token the heatmap shows.

The heatmap's position is recorded by a ``MutationObserver`` on the widget (each change to its
DOM: a status line, a chip, a menu, a pinned row), so a row that comes and goes during a request
is seen, with no timing window.
"""

from __future__ import annotations

import pytest
from lab_server import open_notebook
from live_driver import hooked, wait_for_live_controls, wait_idle

pytestmark = [pytest.mark.jupyterlab, pytest.mark.slow]

SETUP = """\
from murano_widgets import load_demo_model, show_logit_lens
model = load_demo_model()
w = show_logit_lens(model, ["The capital of France is", "Monday, Tuesday,"])
w"""

READ = """print("STATE", w.targets, w.target, w.metric)"""

# Records the heatmap canvas's top (page coordinates) at every change inside the widget.
WATCH_GRID = """() => {
  const root = document.querySelector('.murano-root');
  const canvas = root.querySelector('.murano-canvas');
  const top = () => canvas.getBoundingClientRect().top + window.scrollY;
  window.__tops = [top()];
  window.__gridWatch = new MutationObserver(() => window.__tops.push(top()));
  window.__gridWatch.observe(root, { subtree: true, childList: true, attributes: true, characterData: true });
}"""


def grid_moves(page) -> list[float]:
    """The distinct offsets of the heatmap from where it was when the watch began."""
    tops = page.evaluate("() => window.__tops")
    return sorted({round(t - tops[0], 1) for t in tops} - {0.0})


def test_a_refused_text_is_said_in_the_widget_and_nothing_moves_the_grid(browser, jupyterlab):
    name = jupyterlab.write_notebook("live_layout.ipynb", [SETUP, READ])
    with open_notebook(browser, jupyterlab, name, height=1200) as notebook:
        page = notebook.page
        notebook.run(0)
        wait_for_live_controls(page)
        rect = page.evaluate(hooked("() => $HOOK.cellClientRect(2, 3)"))
        cell = (rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2)
        page.evaluate(WATCH_GRID)
        page.mouse.move(*cell)

        # 1. "Tokyo" is 'T' + 'okyo': refused, in the widget, naming the tokens and " Tokyo".
        track = page.locator(".murano-live-track")
        track.fill("Tokyo")
        track.press("Enter")
        error = page.locator(".murano-live-error")
        error.wait_for(state="visible", timeout=60_000)
        text = error.inner_text()
        assert "'Tokyo' is 2 tokens here ('T' + 'okyo')" in text, text
        assert "' Tokyo' (with its leading space) is one token: track that." in text, text
        assert page.locator(".murano-chip").count() == 0
        assert track.input_value() == "Tokyo"  # kept, to be corrected

        # 2. The one-token form is tracked: its chip, the Token menu, the heatmap coloured by it.
        track.fill(" Tokyo")
        track.press("Enter")
        page.wait_for_selector(".murano-chip:has-text('Tokyo')", timeout=60_000)
        wait_idle(page)
        assert page.locator(".murano-target-select").is_visible()
        assert page.locator(".murano-live-error").is_hidden()

        # 3. Pinning the cell under the pointer adds its rows under the heatmap.
        page.mouse.click(*cell)
        page.wait_for_selector(".murano-patch-run", state="visible")
        pinned = page.evaluate(
            "() => [document.querySelector('.murano-pin-topk').getBoundingClientRect().top,"
            " document.querySelector('.murano-main').getBoundingClientRect().bottom]"
        )
        assert grid_moves(page) == [], "the heatmap moved under the pointer"
        assert pinned[0] >= pinned[1], pinned

        # 4. A request's status line comes and goes.
        page.locator(".murano-patch-source").select_option("zero")
        page.locator(".murano-patch-run").click()
        page.wait_for_selector(".murano-patch-diff", state="visible", timeout=60_000)
        wait_idle(page)

        assert grid_moves(page) == [], "the heatmap moved under the pointer"
        assert page.evaluate(hooked("() => $HOOK.state.selected")) is not None
        assert notebook.run_and_read(1, "STATE") == "[' Tokyo']  Tokyo target"


def test_the_patch_follows_the_dark_theme_and_the_tracked_token(browser, jupyterlab):
    """Under JupyterLab Dark the patched diff is no white block (its cells included: most are
    "no change"), its change follows the tracked token the heatmap shows, and the panel says what
    was patched once; switched to KL, the chart draws KL."""
    import io

    import numpy as np
    from harness import ARTIFACTS
    from PIL import Image
    from test_themes_browser import light_block_fraction

    name = jupyterlab.write_notebook("live_dark.ipynb", [SETUP, READ])
    with open_notebook(browser, jupyterlab, name, height=1400) as notebook:
        page = notebook.page
        notebook.run(0)
        wait_for_live_controls(page)
        track = page.locator(".murano-live-track")
        track.fill(" Tokyo")
        track.press("Enter")
        page.wait_for_selector(".murano-chip:has-text('Tokyo')", timeout=60_000)
        wait_idle(page)
        rect = page.evaluate(hooked("() => $HOOK.cellClientRect(2, 3)"))
        page.mouse.click(rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2)
        page.locator(".murano-patch-source").select_option("zero")
        page.locator(".murano-patch-run").click()
        page.wait_for_selector(".murano-patch-diff", state="visible", timeout=60_000)
        wait_idle(page)
        notebook.use_theme("JupyterLab Dark")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.locator(".murano-root").first.screenshot(path=str(ARTIFACTS / "live_patch_dark.png"))

        diff = page.locator(".murano-patch-diff")
        shot = diff.screenshot()
        pixels = np.asarray(Image.open(io.BytesIO(shot)).convert("RGB"))
        block = light_block_fraction(pixels)
        assert block < 0.002, f"{block:.1%} of the patched diff is a light block"
        # What the change follows: the token the heatmap is coloured by, named in the legend.
        assert "the token ' Tokyo'" in diff.inner_text()
        panel = page.locator(".murano-patch").inner_text()
        assert panel.count("set to zero") == 1, panel

        # The chart reads what the colours read.
        page.locator(".murano-select").first.select_option("kl")
        page.wait_for_function(
            hooked("() => $HOOK.trajectory && $HOOK.trajectory.mode === 'metric'"),
            timeout=30_000,
        )
        series = page.evaluate(hooked("() => $HOOK.trajectory.series.map((s) => s.key)"))
        assert series == ["metric:kl"], series
