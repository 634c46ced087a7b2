"""Issue 10, item 8, the front end's part: nothing is cut off, covered or left dangling.

Each test failed before its fix (run against the previous stylesheet and placement code):
the colour menu's longest label was cut at 1280 px (``max-width: 26ch``), the readout was cut
with "…" in dark mode at 1280 px (one line, ``text-overflow: ellipsis``), a hover tooltip could
cover the pinned-cell chip, one prompt showed a lone "Prompt" label, and the tooltip ran out of a
two-layer widget. Issue 21, item 10a: the tooltip flipped over the cells left of the hovered
one although there was room on its right. Screenshots go to tests/_artifacts/ for a person to
look at.
"""

from __future__ import annotations

import pytest
from chromium import new_page
from harness import ARTIFACTS, Bridge
from lens_data import make_result

from murano_widgets import LogitLensWidget

pytestmark = pytest.mark.browser

EIFFEL = ["The", " Eiff", "el", " Tower", " is", " in", " the", " city", " of"]
COUNT = [" one", " two", " three", " four"]

# The select's width, and the width it would take with nothing capping it (a clone beside it).
SELECT_WIDTHS = """(sel) => {
  const clone = sel.cloneNode(true);
  clone.style.maxWidth = 'none';
  clone.style.width = 'max-content';
  clone.style.position = 'absolute';
  clone.style.visibility = 'hidden';
  sel.parentElement.append(clone);
  const widths = [sel.getBoundingClientRect().width, clone.getBoundingClientRect().width];
  clone.remove();
  return widths;
}"""


def rect(page, selector: str) -> dict:
    return page.eval_on_selector(
        selector,
        "(e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; }",
    )


def overlap(a: dict, b: dict) -> float:
    w = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return max(0.0, w) * max(0.0, h)


def wide_page(browser, width: int = 1280, dark: bool = False):
    return new_page(browser, width=width + 40, height=900)


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_colour_menu_shows_its_longest_label_at_1280(browser, dark):
    context, page = wide_page(browser)
    widget = LogitLensWidget(make_result(prompts=[EIFFEL, COUNT], n_layers=8))
    Bridge(page, widget, dark=dark, width=1280)
    width, natural = page.eval_on_selector(".murano-select", SELECT_WIDTHS)
    longest = max((m["label"] for m in widget._meta["metrics"]), key=len)
    assert width >= natural - 0.5, (
        f"the menu is {width:.0f} px, its longest label needs {natural:.0f} px ({longest!r})"
    )
    # Every label is whole in the menu itself (no cut text in the options).
    labels = page.eval_on_selector_all(
        ".murano-select option", "els => els.map((e) => e.textContent)"
    )
    assert longest in labels
    context.close()


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_readout_is_never_cut_at_1280(browser, dark):
    context, page = wide_page(browser)
    widget = LogitLensWidget(make_result(prompts=[EIFFEL, COUNT], n_layers=8))
    bridge = Bridge(page, widget, dark=dark, width=1280)
    page.mouse.click(*bridge.cell_center(5, 3))
    bridge.sync()
    page.mouse.move(*bridge.cell_center(4, 6))
    bridge.wait_frames()
    text = page.inner_text(".murano-readout")
    assert text.startswith("Layer 5, position 3") and text.endswith("pinned.")
    fits = page.eval_on_selector(
        ".murano-readout",
        "(e) => [e.scrollWidth, e.clientWidth, e.scrollHeight, e.clientHeight, getComputedStyle(e).textOverflow]",
    )
    assert fits[0] <= fits[1] + 1 and fits[2] <= fits[3] + 1, fits
    bridge.screenshot(f"widget_{'dark' if dark else 'light'}_1280.png")
    # Also the longest readout there is: a pinned cell whose tokens are long.
    page.focus(".murano-canvas")
    page.keyboard.press("End")
    bridge.wait_frames()
    fits = page.eval_on_selector(".murano-readout", "(e) => [e.scrollWidth, e.clientWidth]")
    assert fits[0] <= fits[1] + 1, fits
    assert not page.errors
    context.close()


def test_hover_tooltip_never_covers_the_pinned_chip(page):
    widget = LogitLensWidget(make_result(prompts=[EIFFEL, COUNT], n_layers=8))
    bridge = Bridge(page, widget)
    page.mouse.click(*bridge.cell_center(5, 3))
    bridge.sync()  # pinned; the detail sections arrive (the tooltip at its tallest)
    assert page.is_visible(".murano-pin")
    pin = rect(page, ".murano-pin")
    checked = 0
    for layer_index in range(8):
        for position in range(len(EIFFEL)):
            page.mouse.move(*bridge.cell_center(layer_index, position))
            bridge.wait_frames(1)
            tip = rect(page, ".murano-tooltip")
            assert overlap(tip, pin) == 0, (layer_index, position, tip, pin)
            checked += 1
    assert checked == 72
    bridge.screenshot("tooltip_and_pin.png")


def test_one_prompt_shows_its_text_without_a_lone_label(page):
    widget = LogitLensWidget(make_result(prompts=[EIFFEL], n_layers=6))
    Bridge(page, widget)
    assert page.is_hidden(".murano-prompt-control .murano-label"), (
        "no 'Prompt' label without a slider"
    )
    assert page.is_hidden(".murano-prompt-control .murano-slider")
    assert page.is_hidden(".murano-prompt-control .murano-value")
    assert page.is_visible(".murano-prompt-text")
    assert page.inner_text(".murano-prompt-text") == "".join(EIFFEL)
    # The prompt's text starts where the labels start, and it is the first line of the controls.
    text, layer = (
        rect(page, ".murano-prompt-text"),
        rect(page, ".murano-layer-control .murano-label"),
    )
    assert abs(text["x"] - layer["x"]) < 1 and text["y"] < layer["y"]
    page.locator(".murano-root").screenshot(path=str(artifacts() / "one_prompt.png"))


@pytest.mark.parametrize("prompts", [1, 2], ids=["one-prompt", "two-prompts"])
def test_tooltip_stays_inside_a_two_layer_widget(page, prompts):
    result = make_result(prompts=[EIFFEL, COUNT][:prompts], n_layers=2, top_k=5)
    widget = LogitLensWidget(result)
    bridge = Bridge(page, widget)
    page.mouse.move(*bridge.cell_center(0, 0))
    bridge.sync()  # the detail sections: the full tooltip
    root = rect(page, ".murano-root")
    for layer_index in range(2):
        for position in range(len(EIFFEL)):
            page.mouse.move(*bridge.cell_center(layer_index, position))
            bridge.wait_frames(1)
            tip = rect(page, ".murano-tooltip")
            assert (
                tip["y"] >= root["y"] - 0.5 and tip["y"] + tip["h"] <= root["y"] + root["h"] + 0.5
            ), (
                layer_index,
                position,
                tip,
                root,
            )
            assert (
                tip["x"] >= root["x"] - 0.5 and tip["x"] + tip["w"] <= root["x"] + root["w"] + 0.5
            )
            # Nothing of it is cut: every line of the tooltip is inside its box.
            clipped = page.eval_on_selector(
                ".murano-tooltip", "(e) => e.scrollHeight - e.clientHeight"
            )
            assert clipped <= 1, (layer_index, position, clipped)
    bridge.screenshot(f"two_layers_{prompts}.png")
    assert not page.errors


def artifacts():
    """The artifacts folder, created on demand."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def client_rect(page, expression: str) -> dict:
    return page.evaluate(
        f"() => {{ const r = {expression}; return {{x: r.x, y: r.y, w: r.width ?? r.w, h: r.height ?? r.h}}; }}"
    )


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_tooltip_sits_right_below_the_cell_where_there_is_room(browser, dark):
    """Issue 21, item 10a: the tooltip flipped over the cells on the left of the hovered one
    whenever its right side touched the trajectory chart's box, even with room on the right (a
    short prompt leaves a gap between the heatmap and the chart); and it sat centred on the
    cell's row, over the row's neighbours. Now it goes right-below the cell, and left or above
    only where that would leave the widget or cover the chart's plot."""
    context, page = wide_page(browser, 1000)
    widget = LogitLensWidget(
        make_result(prompts=[[*COUNT, " five", " six"], COUNT[:3]], n_layers=8)
    )
    bridge = Bridge(page, widget, width=1000, dark=dark)
    page.mouse.move(*bridge.cell_center(0, 0))
    bridge.sync()  # the detail sections: the tooltip at its tallest
    root = rect(page, ".murano-root")
    # The chart's plot and what lies right of it (its layer numbers, on its left, may be covered).
    panel = rect(page, ".murano-trajectory")
    inset = bridge.debug("trajectory.geometry.plotX")
    plot = {**panel, "x": panel["x"] + inset, "w": panel["w"] - inset}
    assert page.eval_on_selector(".murano-main", "e => e.classList.contains('murano-side')")
    screen = page.evaluate("() => ({w: innerWidth, h: innerHeight})")
    for prompt, positions in ((0, range(3)), (1, range(3))):
        if prompt:
            widget.prompt = prompt
            bridge.kernel_set("prompt")
        for position in positions:
            for layer_index in (7, 4, 1):
                page.mouse.move(*bridge.cell_center(layer_index, position))
                bridge.wait_frames(1)
                cell = client_rect(page, f"window.debug.cellClientRect({layer_index}, {position})")
                tip = rect(page, ".murano-tooltip")
                where = (prompt, layer_index, position, cell, tip)
                # On the cell's right, not over the cell, the chart's plot or out of sight.
                assert tip["x"] >= cell["x"] + cell["w"], where
                assert overlap(tip, cell) == 0 and overlap(tip, plot) == 0, where
                assert tip["x"] >= root["x"] and tip["x"] + tip["w"] <= root["x"] + root["w"]
                assert tip["y"] >= max(root["y"], 0) - 0.5, where
                assert tip["y"] + tip["h"] <= min(root["y"] + root["h"], screen["h"]) + 0.5
                # Right-below wherever it fits, else right-above: the row stays clear.
                bottom = min(root["y"] + root["h"] - 4, screen["h"])
                if cell["y"] + cell["h"] + tip["h"] <= bottom:
                    assert abs(tip["y"] - (cell["y"] + cell["h"])) <= 1, where
                elif cell["y"] - tip["h"] >= root["y"] + 4:
                    assert abs(tip["y"] + tip["h"] - cell["y"]) <= 1, where
        bridge.screenshot(f"tooltip_right_{'dark' if dark else 'light'}_prompt{prompt}.png")
    assert not page.errors
    context.close()


def test_no_empty_band_under_the_heatmap_beside_a_taller_chart(browser):
    """Issue 35, item 5: beside the heatmap the trajectory chart (its legend under the plot) is
    taller than the heatmap; the heatmap's footer (colour legend, pin, readout) sits right under
    the heatmap, in its column, instead of under both, which left an empty band there."""
    context, page = wide_page(browser, 1000)
    widget = LogitLensWidget(make_result(prompts=[COUNT, COUNT[:3]], n_layers=6))
    Bridge(page, widget, width=1000)
    assert page.eval_on_selector(".murano-main", "e => e.classList.contains('murano-side')")
    heatmap, chart, footer = (
        rect(page, s) for s in (".murano-heatmap", ".murano-trajectory", ".murano-footer")
    )
    assert chart["y"] + chart["h"] > heatmap["y"] + heatmap["h"] + 20, "the case: a taller chart"
    gap = footer["y"] - (heatmap["y"] + heatmap["h"])
    assert 0 <= gap <= 10, f"{gap:.0f} px between the heatmap and its footer"
    assert footer["x"] + footer["w"] <= chart["x"] + 1, "the footer stays in the heatmap's column"
    assert not page.errors
    context.close()
