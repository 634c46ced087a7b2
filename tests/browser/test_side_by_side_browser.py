"""Two lenses as two grids in the real front end (``lens_beside``): both grids drawn, each with
its own lens's tokens, columns one under the other, one cursor (a hover in either grid marks the
same cell in both, a click in the second pins it), the layer slider moving both, the lens menu
swapping them, Python's trait both ways, one shared colour scale, and the exported page.

The widget holds the demo model's logit and tuned lenses on two prompts with answers; what each
grid shows is checked against that lens's own result.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import Bridge

from murano_widgets import LogitLens, LogitLensWidget, load_demo_model, load_demo_tuned_lens
from murano_widgets.metrics import METRICS, nice_ceil

pytestmark = pytest.mark.browser

PROMPTS = ["The capital of France is", "Monday, Tuesday,"]
ANSWERS = [" Paris", " Wednesday"]
BESIDE = ".murano-canvas-beside"


@pytest.fixture(scope="module")
def results():
    model = load_demo_model()
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(model)}
    return LogitLens(model, lens=lenses).run(PROMPTS, ANSWERS)


def words_at(bridge: Bridge, beside: bool, y: float) -> list[str]:
    """The tokens one grid writes at canvas height ``y``, in column order."""
    layout = bridge.layout()
    texts = [
        t
        for t in bridge.texts()
        if t["beside"] == beside and abs(t["y"] - y) < 2 and t["x"] > layout["labelW"]
    ]
    return [t["text"][1:-1].replace("␣", " ") for t in sorted(texts, key=lambda t: t["x"])]


def row_y(bridge: Bridge, layer_index: int) -> float:
    layout = bridge.layout()
    return (
        layout["heatY"]
        + (layout["nLayers"] - 1 - layer_index) * layout["rowH"]
        + layout["rowH"] / 2
    )


def expected_words(result, prompt: int, layer_index: int) -> list[str]:
    positions = result.positions(prompt).tolist()
    return [result.predicted_words[layer_index][prompt][s] for s in positions]


def canvas_pixel(page, selector: str, x: float, y: float) -> list[int]:
    """A canvas's pixel at client coordinates (x, y), as [r, g, b, a]."""
    return page.evaluate(
        """([sel, x, y]) => {
          const c = document.querySelector(sel);
          const r = c.getBoundingClientRect();
          const k = c.width / r.width;
          return Array.from(c.getContext('2d').getImageData(Math.floor((x - r.left) * k), Math.floor((y - r.top) * k), 1, 1).data);
        }""",
        [selector, x, y],
    )


def edge(rect) -> tuple[float, float]:
    """A point on a cell's left edge, where the hover outline runs, away from its text."""
    return rect["x"] + 0.5, rect["y"] + rect["h"] - 3


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_two_grids_with_one_cursor(page, results, theme):
    widget = LogitLensWidget(results, lens_beside="tuned")
    bridge = Bridge(page, widget, width=1200, dark=theme == "dark")
    bridge.sync()  # answers ask for the detail sections: deliver them
    assert page.is_visible(BESIDE) and page.is_visible(".murano-canvas")
    captions = page.eval_on_selector_all(
        ".murano-grid-caption", "els => els.map(e => e.textContent)"
    )
    assert captions == ["Logit lens", "Tuned lens"]
    options = page.eval_on_selector_all(
        ".murano-beside-select option", "els => els.map(e => [e.value, e.textContent])"
    )
    assert options == [["", "none (one grid)"], ["tuned", "Tuned lens"]]
    assert bridge.state()["beside"] == "tuned"

    # Each grid writes its own lens's top-1 tokens; row 1 differs between the lenses.
    logit_row, tuned_row = (expected_words(results[n], 0, 1) for n in ("logit", "tuned"))
    assert logit_row != tuned_row
    assert words_at(bridge, False, row_y(bridge, 1)) == logit_row
    assert words_at(bridge, True, row_y(bridge, 1)) == tuned_row
    # The columns lie one under the other, the second grid under the first.
    for j in range(len(logit_row)):
        a = bridge.debug(f"cellClientRect(1, {j})")
        b = bridge.debug(f"besideCellClientRect(1, {j})")
        assert abs(a["x"] - b["x"]) < 0.5 and abs(a["w"] - b["w"]) < 0.5 and b["y"] > a["y"]

    # A hover in the second grid marks the same cell in the first, and the tooltip reads the
    # second grid's lens.
    first, second = bridge.debug("cellClientRect(1, 2)"), bridge.debug("besideCellClientRect(1, 2)")
    plain = canvas_pixel(page, ".murano-canvas", *edge(first))
    page.mouse.move(second["x"] + second["w"] / 2, second["y"] + second["h"] / 2)
    bridge.wait_frames()
    state = bridge.state()
    assert state["hover"] == {"layerIndex": 1, "position": 2} and state["hoverGrid"] == 1
    assert canvas_pixel(page, ".murano-canvas", *edge(first)) != plain
    tip = page.inner_text(".murano-tooltip")
    assert tip.startswith("Tuned lens · ") and tuned_row[2].replace(" ", "␣") in tip
    bridge.screenshot(f"side_by_side_hover_beside_{theme}.png")
    # And the other way: a hover in the first grid marks the cell in the second.
    page.mouse.move(0, 0)
    bridge.wait_frames()
    # (the screenshot may have scrolled the page: the cells' places again)
    first, second = bridge.debug("cellClientRect(1, 2)"), bridge.debug("besideCellClientRect(1, 2)")
    plain_beside = canvas_pixel(page, BESIDE, *edge(second))
    page.mouse.move(first["x"] + first["w"] / 2, first["y"] + first["h"] / 2)
    bridge.wait_frames()
    assert bridge.state()["hoverGrid"] == 0
    assert canvas_pixel(page, BESIDE, *edge(second)) != plain_beside
    tip = page.inner_text(".murano-tooltip")
    assert tip.startswith("Logit lens · ") and logit_row[2].replace(" ", "␣") in tip
    bridge.screenshot(f"side_by_side_{theme}.png")

    # A click in the second grid pins the cell: Python reads it under the lens shown.
    page.mouse.click(second["x"] + second["w"] / 2, second["y"] + second["h"] / 2)
    bridge.sync()
    assert widget.selected["layer_index"] == 1 and widget.selected["position"] == 2

    # The layer slider moves both grids: each one's predictions strip is that row's.
    page.evaluate(
        "() => { const s = document.querySelector('.murano-layer-control input');"
        " s.value = '2'; s.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    bridge.sync()
    assert widget.layer == results["logit"].layers[2]
    layout = bridge.layout()
    strip = layout["predY"] + layout["stripH"] / 2 + 0.5
    assert words_at(bridge, False, strip) == expected_words(results["logit"], 0, 2)
    assert words_at(bridge, True, strip) == expected_words(results["tuned"], 0, 2)
    # The chart beside them keeps its rows level with the first grid's, under its caption.
    row = bridge.debug("cellClientRect(2, 0)")
    band = page.eval_on_selector(".murano-traj-band", "(e) => e.getBoundingClientRect().toJSON()")
    assert abs(band["y"] + band["height"] / 2 - (row["y"] + row["h"] / 2)) <= 1


def test_the_menus_and_python_choose_the_grids(page, results):
    widget = LogitLensWidget(results)
    bridge = Bridge(page, widget, width=1200)
    bridge.sync()
    assert page.is_hidden(BESIDE) and bridge.state()["beside"] == ""
    # The beside menu: the second grid, and Python hears it.
    page.select_option(".murano-beside-select", "tuned")
    bridge.wait_frames()
    assert page.is_visible(BESIDE)
    assert bridge.sync() == [{"lens_beside": "tuned"}]
    assert widget.lens_beside == "tuned"
    # The lens menu on the lens beside swaps the two grids, here and in Python.
    page.select_option(".murano-lens-select", "tuned")
    bridge.wait_frames()
    captions = page.eval_on_selector_all(
        ".murano-grid-caption", "els => els.map(e => e.textContent)"
    )
    assert captions == ["Tuned lens", "Logit lens"]
    bridge.sync()
    assert (widget.lens_name, widget.lens_beside) == ("tuned", "logit")
    # Python: the page follows (one grid again, then two).
    widget.lens_beside = ""
    bridge.kernel_set("lens_beside")
    bridge.wait_frames()
    assert page.is_hidden(BESIDE) and page.is_hidden(".murano-grid-caption")
    widget.lens_name = "logit"
    widget.lens_beside = "tuned"
    bridge.kernel_set("lens")
    bridge.kernel_set("lens_beside")
    bridge.wait_frames()
    assert page.is_visible(BESIDE) and bridge.state()["lens"] == "logit"
    assert bridge.sent() == []


def test_both_grids_share_one_colour_scale(page, results):
    """KL's colour scale runs to a round number above the largest value: each lens sends its
    own, and the two grids show both on the larger, so one colour is one value in either."""
    widget = LogitLensWidget(results, lens_beside="tuned", metric="kl")
    bridge = Bridge(page, widget, width=1200)
    bridge.sync()
    tops = []
    for name in ("logit", "tuned"):
        result = results[name]
        values = result.kl_to_final[:, result.attention_mask.bool()].numpy()
        tops.append(nice_ceil(float(np.nanmax(values))))
    assert METRICS["kl"].unit == "bits"
    ticks = page.eval_on_selector_all(".murano-legend-tick", "els => els.map(e => e.textContent)")
    assert float(ticks[-1].split()[0]) == pytest.approx(max(tops)), (ticks, tops)
    # A cell with the same value under both lenses has the same colour in both grids: the last
    # layer, where the tuned lens is the model's own output.
    last = len(results["logit"].layers) - 1
    for j in range(3):
        assert bridge.debug(f"cellColour({last}, {j})") == bridge.debug(
            f"besideCellColour({last}, {j})"
        )


def test_the_export_shows_both_grids_offline(offline_page, results, tmp_path):
    page = offline_page
    widget = LogitLensWidget(results, lens_beside="tuned")
    path = widget.save_html(tmp_path / "two_grids.html")
    page.goto(path.as_uri())
    page.wait_for_selector(BESIDE)
    page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")
    assert page.is_visible(BESIDE)
    captions = page.eval_on_selector_all(
        ".murano-grid-caption", "els => els.map(e => e.textContent)"
    )
    assert captions == ["Logit lens", "Tuned lens"]
    page.select_option(".murano-beside-select", "")
    assert page.is_hidden(BESIDE)
    assert page.refused == []
    assert not page.errors
