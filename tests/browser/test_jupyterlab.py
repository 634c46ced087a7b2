"""The widget in a real JupyterLab: a click in the browser reaches ``w.selected`` in the kernel.

Slow (about 20-40 s): on the session's JupyterLab server (``lab_server``) it opens a notebook in
headless Chromium, runs it, clicks a heatmap cell and moves the layer slider, then reads the traits
back by running a second cell.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import ARTIFACTS
from lab_server import open_notebook
from test_layout_fixes import SELECT_WIDTHS

pytestmark = [pytest.mark.jupyterlab, pytest.mark.slow]

HERE = Path(__file__).resolve().parent

SETUP = """\
from lens_data import make_result
from murano_widgets import LogitLensWidget
w = LogitLensWidget(make_result(n_layers=6))
w"""

READ_BACK = """\
print("TRAITS", w.selected["layer_index"], w.selected["position"], w.selected["input_token"], w.layer)"""


def test_click_in_jupyterlab_sets_selected_in_the_kernel(browser, jupyterlab):
    name = jupyterlab.write_notebook("lens.ipynb", [SETUP, READ_BACK])
    with open_notebook(browser, jupyterlab, name) as notebook:
        page = notebook.page
        cells = notebook.cells
        cells.nth(0).locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        canvas = page.wait_for_selector(".murano-canvas", timeout=120_000)
        page.wait_for_function(
            "() => { const d = document.querySelector('.murano-root')?.parentElement?.__muranoDebug;"
            " return d && d.frames > 0 && d.layout; }"
        )
        assert canvas.is_visible()
        # JupyterLab's own styles do not cut the colour menu's longest label (issue 10).
        width, natural = page.eval_on_selector(".murano-select", SELECT_WIDTHS)
        assert width >= natural - 0.5, (
            f"the menu is {width:.0f} px, its labels need {natural:.0f} px"
        )
        rect = page.evaluate(
            "() => document.querySelector('.murano-root').parentElement.__muranoDebug.cellClientRect(3, 2)"
        )
        page.mouse.click(rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2)
        # Arrow keys in the heatmap move its focus cell, not the notebook's active cell.
        active = page.evaluate(
            "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex((c) => c.classList.contains('jp-mod-active'))"
        )
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowUp")
        assert page.evaluate("() => document.activeElement.className") == "murano-canvas"
        assert (
            page.evaluate(
                "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex((c) => c.classList.contains('jp-mod-active'))"
            )
            == active
        )
        debug_state = page.evaluate(
            "() => document.querySelector('.murano-root').parentElement.__muranoDebug.state"
        )
        assert debug_state["focus"] == {"layerIndex": 3, "position": 2}
        page.focus(".murano-layer-control .murano-slider")
        page.keyboard.press("Home")
        page.wait_for_timeout(300)  # throttled sync
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "jupyterlab_widget.png"))
        # Read the traits back in the kernel.
        cells.nth(1).locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        output = page.wait_for_selector(".jp-OutputArea-output:has-text('TRAITS')", timeout=60_000)
        words = output.inner_text().split()
        assert words[:3] == ["TRAITS", "3", "2"], words
        assert words[-1] == "0", "the layer slider's Home reached w.layer"
        # The pin drawn by the front end agrees with what Python described.
        state = page.evaluate(
            "() => document.querySelector('.murano-root').parentElement.__muranoDebug.state"
        )
        assert state["selected"]["layer_index"] == 3 and state["selected"]["position"] == 2
        assert "layer" in state["selected"], "Python's full description came back to the view"
