"""The real widget front end in headless Chromium, fed the Python widget's actual state.

Each test renders the built front end (``murano_widgets/static/logit_lens.js``) in a page (see
``harness.py``), drives it with the mouse and the keyboard, reads back pixels, canvas text, DOM
and the messages sent to the "kernel", and applies those messages to the Python
``LogitLensWidget`` through its traits.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from harness import ARTIFACTS, ORIGIN, Bridge, widget_state
from lens_data import HOSTILE_TOKENS, make_result
from matplotlib import colormaps

from murano_widgets import LogitLensWidget

pytestmark = pytest.mark.browser

LRI, PDI = "\u2066", "\u2069"

EIFFEL = ["The", " Eiff", "el", " Tower", " is", " in", " the", " city", " of"]
COUNT = [" one", " two", " three", " four"]


@pytest.fixture
def widget():
    return LogitLensWidget(make_result(prompts=[EIFFEL, COUNT], n_layers=8, padding="left"))


def lut_colour(name: str, t: float, reverse: bool = False) -> np.ndarray:
    """The colour of t on a matplotlib map, quantised to the front end's 256-step table."""
    t = min(1.0, max(0.0, t))
    k = round(t * 255) / 255
    if reverse:
        k = 1 - k
    return np.array(colormaps[name](k)[:3]) * 255


def cell_raw(widget, name: str, layer_index: int, prompt: int, position: int) -> int:
    meta = widget._meta
    data = widget._sections[name]
    dtype = np.dtype(meta["sections"][name]["dtype"]).newbyteorder("<")
    array = np.frombuffer(data, dtype=dtype).reshape(meta["sections"][name]["shape"])
    return int(array[layer_index, meta["offsets"][prompt] + position])


def swatch(bridge: Bridge, layer_index: int, position: int) -> np.ndarray:
    """A canvas pixel inside the cell, clear of its text, dot and grid lines."""
    r = bridge.page.evaluate(
        "([i, j]) => window.debug.cellClientRect(i, j)", [layer_index, position]
    )
    return np.array(bridge.pixel(r["x"] + 3, r["y"] + r["h"] - 3))


def strip_texts(bridge: Bridge, y: float) -> list[str]:
    layout = bridge.layout()
    texts = [t for t in bridge.texts() if abs(t["y"] - y) < 1 and t["x"] > layout["labelW"]]
    return [t["text"] for t in sorted(texts, key=lambda t: t["x"])]


def unwrap(text: str) -> str:
    assert text.startswith(LRI) and text.endswith(PDI), f"canvas text not isolated: {text!r}"
    return text[1:-1]


def metric(widget, name: str) -> dict:
    """The registry entry Python sent for metric ``name``."""
    return next(m for m in widget._meta["metrics"] if m["name"] == name)


def short_label(label: str) -> str:
    """A label without its trailing parenthesis, as the tooltip shows it."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", label) or label


def display(token: str) -> str:
    """The front end's visible form of a token, for the plain tokens used here."""
    return token.replace(" ", "␣").replace("\n", "↵")


# -- What is drawn --------------------------------------------------------------------------


def test_cells_labels_and_colours(page, widget):
    bridge = Bridge(page, widget)
    meta = widget._meta
    layout = bridge.layout()
    assert (layout["nLayers"], layout["nPositions"]) == (8, len(EIFFEL))
    assert bridge.state()["layer"] == 7, "the highest layer is highlighted first"

    # Colours: each cell is viridis(top-1 probability), the final layer in the top row.
    for layer_index, position in [(7, 0), (0, 0), (3, 4), (5, 8)]:
        raw = cell_raw(widget, "max_probs", layer_index, 0, position)
        expected = lut_colour("viridis", raw / 65535)
        got = swatch(bridge, layer_index, position)
        assert np.abs(got[:3] - expected).max() <= 6, (layer_index, position, got, expected)
        assert got[3] == 255
    top = page.evaluate("() => window.debug.cellClientRect(7, 0)")
    bottom = page.evaluate("() => window.debug.cellClientRect(0, 0)")
    assert top["y"] < bottom["y"], "final layer at the top"

    texts = bridge.texts()
    labelW = layout["labelW"]
    # Row labels: the layer numbers, at the left, top to bottom = highest to lowest.
    row_labels = [
        t
        for t in texts
        if t["x"] < labelW and layout["heatY"] <= t["y"] < layout["heatY"] + layout["heatH"]
    ]
    assert [t["text"] for t in sorted(row_labels, key=lambda t: t["y"])] == [
        str(n) for n in reversed(meta["layers"])
    ]
    # Column labels: the input tokens, in order; padding of the shorter prompt is never shown.
    strip_y = layout["inputY"] + layout["stripH"] / 2 + 0.5
    assert [unwrap(t) for t in strip_texts(bridge, strip_y)] == [display(t) for t in EIFFEL]
    # Cell text: each cell's top-1 token, in a colour that contrasts with the cell.
    words = widget.result.predicted_words
    row_y = (
        layout["heatY"] + 3 * layout["rowH"] + layout["rowH"] / 2 + 0.5
    )  # screen row 3 = index 4
    seq = widget.result.positions(0).tolist()
    cells = [unwrap(t) for t in strip_texts(bridge, row_y)]
    assert cells == [display(words[4][0][s]) for s in seq]
    # The highlighted layer's predictions under the input tokens.
    pred_y = layout["predY"] + layout["stripH"] / 2 + 0.5
    assert [unwrap(t) for t in strip_texts(bridge, pred_y)] == [
        display(words[7][0][s]) for s in seq
    ]
    assert {"L7", "input", "layer"} <= {t["text"] for t in texts if t["x"] < labelW}
    assert not page.errors


@pytest.mark.parametrize("offset", [3, 8])
def test_sections_at_a_nonzero_byte_offset(page, widget, offset):
    """DataViews that start inside a larger buffer (unaligned at 3) decode to the same cells."""
    bridge = Bridge(page, widget, byte_offset=offset)
    assert page.evaluate("() => window.model.get('_sections').max_probs.byteOffset") == offset
    lengths = widget._meta["lengths"]
    colours = page.evaluate(
        """(n) => { const out = []; for (let i = 0; i < 8; i++) for (let j = 0; j < n; j++)
           out.push(window.debug.cellColour(i, j)); return out; }""",
        lengths[0],
    )
    for k, colour in enumerate(colours):
        i, j = divmod(k, lengths[0])
        expected = lut_colour("viridis", cell_raw(widget, "max_probs", i, 0, j) / 65535)
        assert np.abs(np.array(colour[:3]) - expected).max() <= 6
        if (i, j) == (3, 4):
            assert np.abs(swatch(bridge, i, j)[:3] - expected).max() <= 6, "and on the canvas"
    details = page.evaluate("() => window.debug.cellDetails(2, 5)")
    seq = widget.result.positions(0).tolist()[5]
    assert details["input"] == EIFFEL[5]
    assert details["top"][0]["token"] == widget.result.predicted_words[2][0][seq]
    assert math.isclose(
        details["top"][0]["prob"], float(widget.result.max_probs[2, 0, seq]), abs_tol=2e-5
    )


def test_hidpi_canvas_is_sharp(hidpi_page, widget):
    bridge = Bridge(hidpi_page, widget)
    size = hidpi_page.evaluate(
        "() => { const c = document.querySelector('.murano-canvas'); return [c.width, c.getBoundingClientRect().width]; }"
    )
    assert size[0] == 2 * round(size[1])
    raw = cell_raw(widget, "max_probs", 6, 0, 2)
    assert np.abs(swatch(bridge, 6, 2)[:3] - lut_colour("viridis", raw / 65535)).max() <= 6


def test_missing_row_is_hatched_not_coloured(page):
    widget = LogitLensWidget(make_result(prompts=[EIFFEL], n_layers=6, missing=(2, 0)))
    bridge = Bridge(page, widget)
    assert page.evaluate("() => window.debug.cellColour(2, 1)")[3] == 0
    assert page.evaluate("() => window.debug.cellColour(3, 1)")[3] == 255
    # The hatch shows the background and thin lines, never a colour of the scale.
    viridis = np.array([lut_colour("viridis", k / 255) for k in range(256)])
    r = page.evaluate("() => window.debug.cellClientRect(2, 1)")
    for dx in range(2, 12, 3):
        px = np.array(bridge.pixel(r["x"] + dx, r["y"] + r["h"] / 2))
        assert np.abs(viridis - px[:3]).max(axis=1).min() > 10, px
    assert page.is_visible(".murano-key-missing")
    x, y = bridge.cell_center(2, 1)
    page.mouse.move(x, y)
    bridge.wait_frames()
    assert "not finite" in page.inner_text(".murano-tooltip")


# -- Sliders ----------------------------------------------------------------------------------


def drag(
    page, selector: str, fraction: float, steps: int = 12, pause_ms: int = 15, bridge=None
) -> None:
    """Drags a slider's thumb to ``fraction`` of its track in ``steps`` moves, ``pause_ms``
    apart: on ``bridge``'s page clock where one is given (paused: the same timing under any
    load), else in real time."""
    box = page.locator(selector).bounding_box()
    y = box["y"] + box["height"] / 2
    value = page.eval_on_selector(selector, "e => (e.value - e.min) / Math.max(1, e.max - e.min)")
    x0 = box["x"] + 8 + (box["width"] - 16) * value
    x1 = box["x"] + 8 + (box["width"] - 16) * fraction
    page.mouse.move(x0, y)
    page.mouse.down()
    for k in range(1, steps + 1):
        page.mouse.move(x0 + (x1 - x0) * k / steps, y)
        if bridge is not None:
            bridge.advance(pause_ms)
        else:
            page.wait_for_timeout(pause_ms)
    page.mouse.up()


LAYER = ".murano-layer-control .murano-slider"
PROMPT = ".murano-prompt-control .murano-slider"


def test_layer_slider_with_the_mouse(page, widget):
    bridge = Bridge(page, widget)
    bridge.pause()
    drag(page, LAYER, 0.0, steps=20, pause_ms=15, bridge=bridge)  # 300 ms on the page's clock
    bridge.wait_frames()
    assert bridge.state()["layer"] == 0
    assert page.inner_text(".murano-layer-control .murano-value") == "L0"
    # The view follows at once: the predictions strip shows layer 0's top-1 tokens.
    layout = bridge.layout()
    seq = widget.result.positions(0).tolist()
    pred_y = layout["predY"] + layout["stripH"] / 2 + 0.5
    assert [unwrap(t) for t in strip_texts(bridge, pred_y)] == [
        display(widget.result.predicted_words[0][0][s]) for s in seq
    ]
    # The highlighted row moved to the bottom (accent outline around screen row 7).
    r = page.evaluate("() => window.debug.cellClientRect(0, 0)")
    accent = np.array(bridge.pixel(r["x"] + 10, r["y"] - 0.5))[:3]
    assert np.abs(accent - [0x09, 0x69, 0xDA]).max() < 40, accent
    # Sync to Python is throttled: at most one message per 100 ms of the drag's 300 ms (the
    # leading one and one per window), and the last value, where 20 moves would send 20.
    sent = [m["layer"] for m in bridge.sent() if "layer" in m]
    assert sent[-1] == 0
    assert 2 <= len(sent) <= 300 / 100 + 1, sent
    bridge.sync()
    assert widget.layer == 0


def test_layer_slider_with_the_keyboard(page, widget):
    bridge = Bridge(page, widget)
    page.focus(LAYER)
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    bridge.wait_frames()
    assert bridge.state()["layer"] == 4
    assert page.get_attribute(LAYER, "aria-valuetext") == "layer 4, row 4 (0 to 7)"
    bridge.sync()
    assert widget.layer == 4
    page.keyboard.press("Home")
    bridge.sync()
    assert widget.layer == 0
    assert bridge.state()["layer"] == 0


def test_a_burst_of_slider_input_sends_few_messages(page, widget):
    """41 inputs with no time passing (the page's clock paused, so a loaded machine cannot
    stretch the burst past the throttle's window): the leading value goes out at once, the
    latest one when the window closes, and a ``change`` flushes at once."""
    bridge = Bridge(page, widget)
    bridge.pause()
    page.evaluate(
        """() => { const s = document.querySelector('.murano-layer-control .murano-slider');
           for (let k = 0; k < 40; k++) { s.value = String(k % 8); s.dispatchEvent(new Event('input')); }
           s.value = '3'; s.dispatchEvent(new Event('input')); }"""
    )
    sent = [m for m in bridge.sent() if "layer" in m]
    assert len(sent) == 1, "only the leading call goes out inside the window"
    bridge.advance(99)
    assert len([m for m in bridge.sent() if "layer" in m]) == 1, "the window is 100 ms"
    bridge.advance(1)
    sent = [m["layer"] for m in bridge.sent() if "layer" in m]
    assert sent[-1] == 3 and len(sent) == 2
    page.evaluate(
        """() => { const s = document.querySelector('.murano-layer-control .murano-slider');
           s.value = '5'; s.dispatchEvent(new Event('input')); s.value = '6';
           s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); }"""
    )
    assert [m["layer"] for m in bridge.sent() if "layer" in m][-1] == 6, "change flushes at once"
    bridge.sync()
    assert widget.layer == 6


def test_prompt_slider_with_mouse_and_keyboard(page, widget):
    bridge = Bridge(page, widget)
    assert "The Eiffel Tower is in the city of" in page.inner_text(".murano-prompt-text")
    drag(page, PROMPT, 1.0)
    bridge.wait_frames()
    assert bridge.state()["prompt"] == 1
    assert page.text_content(".murano-prompt-text") == "".join(COUNT)
    assert page.inner_text(".murano-prompt-control .murano-value") == "1 (0–1)"
    layout = bridge.layout()
    assert layout["nPositions"] == len(COUNT), "padding is not shown"
    strip_y = layout["inputY"] + layout["stripH"] / 2 + 0.5
    assert [unwrap(t) for t in strip_texts(bridge, strip_y)] == [display(t) for t in COUNT]
    bridge.sync()
    assert widget.prompt == 1
    page.focus(PROMPT)
    page.keyboard.press("ArrowLeft")
    bridge.sync()
    assert widget.prompt == 0
    assert bridge.layout()["nPositions"] == len(EIFFEL)


def test_python_drives_the_view(page, widget):
    bridge = Bridge(page, widget)
    widget.prompt = 1
    widget.layer = 2
    bridge.kernel_set("prompt")
    bridge.kernel_set("layer")
    bridge.wait_frames()
    state = bridge.state()
    assert (state["prompt"], state["layer"]) == (1, 2)
    assert page.eval_on_selector(LAYER, "e => e.value") == "2"
    assert page.eval_on_selector(PROMPT, "e => e.value") == "1"
    assert bridge.sent() == [], "values from Python are not echoed back"
    # Out-of-range values from elsewhere are clamped, never drawn out of bounds.
    page.evaluate("() => window.model.kernelSet('layer', 99)")
    bridge.wait_frames()
    assert bridge.state()["layer"] == 7


# -- Metric switch ----------------------------------------------------------------------------


def test_metric_switch_waits_for_detail_sections(page, widget):
    bridge = Bridge(page, widget)
    assert "entropy" not in widget._sections
    page.select_option(".murano-select", "final_rank")
    bridge.wait_frames()
    state = bridge.state()
    assert state["metric"] == "final_rank" and state["shownMetric"] == "prob"
    assert "loading" in page.inner_text(".murano-legend-title")
    bridge.sync()
    assert widget.metric == "final_rank"
    assert "final_token_ranks" in widget._sections, "Python sent the detail sections"
    state = bridge.state()
    assert state["shownMetric"] == "final_rank"
    spec = metric(widget, "final_rank")
    assert page.inner_text(".murano-legend-title") == spec["label"]
    ticks = page.eval_on_selector_all(".murano-legend-tick", "els => els.map(e => e.textContent)")
    assert ticks[0] == "0", "rank 0 = the top-1 token"
    # Colour = reversed viridis on a log scale over Python's domain: rank 0 is the bright end.
    assert spec["log"] and spec["reverse"] and spec["domain"][0] == 0
    domain_max = spec["domain"][1]
    raw_max = int(np.frombuffer(widget._sections["final_token_ranks"], dtype="<u2").max())
    assert domain_max >= raw_max
    for layer_index, position in [(7, 1), (1, 3)]:
        rank = cell_raw(widget, "final_token_ranks", layer_index, 0, position)
        t = math.log1p(rank) / math.log1p(domain_max)
        expected = lut_colour("viridis", t, reverse=True)
        assert np.abs(swatch(bridge, layer_index, position)[:3] - expected).max() <= 6


def test_metric_switch_with_the_keyboard(page, widget):
    bridge = Bridge(page, widget)
    page.focus(".murano-select")
    page.keyboard.press("ArrowDown")
    bridge.sync()
    assert widget.metric == "entropy"
    assert bridge.state()["shownMetric"] == "entropy"
    # Entropy: low entropy is the bright end of (reversed) cividis, up to log2(vocab).
    bits = cell_raw(widget, "entropy", 2, 0, 2) * widget._meta["sections"]["entropy"]["scale"]
    low, high = metric(widget, "entropy")["domain"]
    assert high == widget._meta["max_entropy"]
    expected = lut_colour("cividis", (bits - low) / (high - low), reverse=True)
    assert np.abs(swatch(bridge, 2, 2)[:3] - expected).max() <= 6
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    bridge.sync()
    assert widget.metric == "kl"
    assert bridge.state()["shownMetric"] == "kl"


# -- Hover, focus, pin ------------------------------------------------------------------------


def test_details_that_do_not_come_are_not_loading_for_ever(page, widget):
    """A saved notebook reopened without its kernel never answers the request for the detail
    sections: after a while the tooltip and the chart's note say what they wait for, and the
    details still show once they come (a kernel that was only busy)."""
    bridge = Bridge(page, widget)
    bridge.pause()  # time moves only as this test says: 34 ms of frames, then 4.9 s
    x, y = bridge.cell_center(3, 2)
    page.mouse.move(x, y)
    bridge.wait_frames()
    assert "Loading details…" in page.inner_text(".murano-tooltip")
    assert bridge.sent() == [{"_details": True}]
    # Not before the time-out (5 s): a kernel that answers at all answers well within it.
    bridge.advance(4900)
    assert "Loading details…" in page.inner_text(".murano-tooltip")
    bridge.advance(200)
    tip = page.inner_text(".murano-tooltip")
    assert "Loading" not in tip
    assert "Waiting for the kernel to send details: it is busy, or there is none" in tip
    bridge.sync()
    bridge.wait_frames()
    tip = page.inner_text(".murano-tooltip")
    assert "Waiting" not in tip and "Loading" not in tip
    assert "bits" in tip


def test_hover_shows_the_tooltip_and_asks_for_details_once(page, widget):
    bridge = Bridge(page, widget)
    x, y = bridge.cell_center(3, 2)
    page.mouse.move(x, y)
    bridge.wait_frames()
    tip = page.inner_text(".murano-tooltip")
    assert "Layer 3 · position 2" in tip
    assert "Loading details…" in tip
    assert bridge.sent() == [{"_details": True}]
    bridge.sync()
    assert widget._details
    tip = page.inner_text(".murano-tooltip")
    result = widget.result
    seq = result.positions(0).tolist()[2]
    assert "Loading" not in tip
    for rank in range(5):
        word = result.token_strings[int(result.topk_tokens[3, 0, seq, rank])]
        assert display(word) in tip
    assert "input" in tip and display(EIFFEL[2]) in tip
    assert "bits" in tip
    for spec in widget._meta["metrics"]:
        # Every metric this result has (the registry also lists some it lacks, e.g. "answer").
        assert (short_label(spec["label"]) in tip) == spec["available"], spec["label"]
    rank = int(result.final_token_ranks[3, 0, seq])
    assert f"rank {rank}" in tip, "one rank convention: rank 0 = the top-1 token"
    # More hovering does not ask again.
    x, y = bridge.cell_center(5, 4)
    page.mouse.move(x, y)
    bridge.wait_frames()
    assert "Layer 5 · position 4" in page.inner_text(".murano-tooltip")
    assert bridge.sent() == []
    page.mouse.move(2, 2)
    bridge.wait_frames()
    assert page.is_hidden(".murano-tooltip")


def test_click_pins_and_python_reads_it(page, widget):
    bridge = Bridge(page, widget)
    x, y = bridge.cell_center(4, 3)
    page.mouse.click(x, y)
    sent = bridge.sync()
    assert {"selected": {"prompt": 0, "layer_index": 4, "position": 3}} in sent
    seq = widget.result.positions(0).tolist()[3]
    assert widget.selected["layer"] == 4
    assert widget.selected["input_token"] == EIFFEL[3]
    assert widget.selected["predicted_token"] == widget.result.predicted_words[4][0][seq]
    assert bridge.state()["selected"]["input_token"] == EIFFEL[3], "Python's description came back"
    assert "Pinned: L4 · pos 3" in page.inner_text(
        ".murano-pin"
    ) or "L4 · pos 3" in page.inner_text(".murano-pin")
    # The pinned cell has a heavy outline.
    r = page.evaluate("() => window.debug.cellClientRect(4, 3)")
    edge = np.array(bridge.pixel(r["x"] + 1, r["y"] + r["h"] / 2))[:3]
    assert np.abs(edge - [0x1F, 0x23, 0x28]).max() < 40, edge
    # Clicking it again unpins.
    page.mouse.click(x, y)
    bridge.sync()
    assert widget.selected is None
    assert page.is_hidden(".murano-pin")


def test_keyboard_focus_cell_readout_and_pin(page, widget):
    bridge = Bridge(page, widget)
    # Tab order: metric switch, prompt slider, layer slider, heatmap.
    page.focus(".murano-select")
    order = []
    for _ in range(3):
        page.keyboard.press("Tab")
        order.append(page.evaluate("() => document.activeElement.className"))
    assert order == ["murano-slider", "murano-slider", "murano-canvas"]
    bridge.wait_frames()
    state = bridge.state()
    assert state["focused"] and state["focus"] == {"layerIndex": 7, "position": 0}
    readout = page.locator(".murano-readout")
    assert readout.get_attribute("aria-live") == "polite"
    assert readout.inner_text().startswith("Layer 7, position 0, input The")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    bridge.wait_frames()
    assert bridge.state()["focus"] == {"layerIndex": 6, "position": 2}
    seq = widget.result.positions(0).tolist()[2]
    top1 = display(widget.result.predicted_words[6][0][seq])
    assert readout.inner_text().startswith(f"Layer 6, position 2, input el; top-1 {top1} ")
    assert "Layer 6 · position 2" in page.inner_text(".murano-tooltip")
    page.keyboard.press("End")
    assert bridge.state()["focus"]["position"] == len(EIFFEL) - 1
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    bridge.sync()
    assert widget.selected["layer_index"] == 6 and widget.selected["position"] == 0
    assert readout.inner_text().endswith("pinned.")
    page.keyboard.press("Escape")
    bridge.sync()
    assert widget.selected is None
    assert readout.inner_text() == "Unpinned."
    label = page.get_attribute(".murano-canvas", "aria-label")
    assert "8 layers" in label and "Arrow keys" in label


# -- Untrusted tokens -------------------------------------------------------------------------


def test_hostile_tokens_render_as_text_and_nothing_runs(page):
    prompts = [HOSTILE_TOKENS, ["plain", " text"]]
    widget = LogitLensWidget(make_result(prompts=prompts, vocab=HOSTILE_TOKENS, n_layers=6))
    bridge = Bridge(page, widget)
    bridge.sync()
    layout = bridge.layout()
    strip_y = layout["inputY"] + layout["stripH"] / 2 + 0.5
    # What the canvas draws: visible marks, isolated left-to-right; truncated to the cell width.
    drawn = [unwrap(t) for t in strip_texts(bridge, strip_y)]
    assert len(drawn) == len(HOSTILE_TOKENS)
    full = page.evaluate("(ts) => ts.map((t) => window.lens.displayToken(t))", HOSTILE_TOKENS)
    assert full == [
        "<img␣src=x␣onerror=window.__pwned=1>",
        "<script>window.__pwned=2</script>",
        "&amp;",
        "↵",
        "<U+200F>",
        "␣␣two␣spaces",
        "\ufffd",
        "\"'",
        "שלום",
        "⇥",
    ]
    for shown, whole in zip(drawn, full, strict=True):
        assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1]))
    # The tooltip shows them as text (hover each input position at the top row).
    for position, expected in enumerate(full):
        x, y = bridge.cell_center(5, position)
        page.mouse.move(x, y)
        bridge.wait_frames(1)
        values = page.eval_on_selector_all(
            ".murano-tooltip .murano-token", "els => els.map((e) => e.textContent)"
        )
        assert expected in values, (position, values)
    # Select the prompt's text, which is made of those tokens.
    prompt_text = page.inner_text(".murano-prompt-text")
    assert "<img src=x onerror=window.__pwned=1><script>" in prompt_text
    assert "↵" in prompt_text and "<U+200F>" in prompt_text and "\u200f" not in prompt_text
    page.wait_for_timeout(200)
    # Nothing ran, no element was made from the data, nothing was fetched.
    assert page.evaluate("() => window.__pwned") is None
    assert page.evaluate("() => document.querySelectorAll('img').length") == 0
    assert page.evaluate("() => document.querySelectorAll('script').length") == 1
    assert page.evaluate(
        # getAttribute: an SVG element's className is not a string.
        "() => [...document.querySelectorAll('.murano-root *')].every((e) => e.tagName === 'OPTION'"
        " || (e.getAttribute('class') || '').split(/\\s+/).every((c) => c === '' || c.startsWith('murano-')))"
    )
    assert all(url.startswith(ORIGIN) for url in page.requests_seen)
    assert not any(url.endswith("/x") for url in page.requests_seen)
    assert not page.errors


def test_no_innerhtml_in_the_front_end():
    from harness import JS

    source = JS.read_text(encoding="utf-8")
    for needle in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
    ):
        assert needle not in source, needle


# -- Layout at scale, themes, lifecycle ----------------------------------------------------------


def test_long_prompt_scrolls_with_labels_in_view(page):
    tokens = [f" t{k}" for k in range(300)]
    widget = LogitLensWidget(make_result(prompts=[tokens], n_layers=24, top_k=3))
    bridge = Bridge(page, widget)
    layout = bridge.layout()
    assert layout["maxScroll"] > 0
    first = bridge.debug("visibleColumns")
    assert first[1] == 300 and first[1] - first[0] < 40, (
        "it opens at the prompt's end, drawing only the visible columns"
    )
    page.eval_on_selector(".murano-scroll", "(e) => { e.scrollLeft = 5000; }")
    bridge.wait_frames()
    c0, c1 = bridge.debug("visibleColumns")
    assert c0 == 5000 // layout["cellW"]
    texts = bridge.texts()
    strip_y = layout["inputY"] + layout["stripH"] / 2 + 0.5
    inputs = [
        unwrap(t["text"]) for t in texts if abs(t["y"] - strip_y) < 1 and t["text"].startswith(LRI)
    ]
    assert len(inputs) == c1 - c0
    assert f"␣t{c0 + 1}" in inputs
    # Row labels stay at the left whatever the scroll.
    labels = {t["text"] for t in texts if t["x"] < layout["labelW"]}
    assert {"23", "input", "L23"} <= labels
    # The canvas itself stays in view (sticky) and hit-tests scrolled columns.
    box = page.locator(".murano-canvas").bounding_box()
    assert box["x"] >= 0 and box["x"] < 40
    x, y = bridge.cell_center(10, c0 + 2)
    page.mouse.move(x, y)
    bridge.wait_frames()
    assert f"position {c0 + 2}" in page.inner_text(".murano-tooltip")
    # Keyboard focus reveals the column it moves to.
    page.focus(".murano-canvas")
    page.keyboard.press("End")
    bridge.wait_frames()
    assert bridge.debug("visibleColumns")[1] == 300
    assert page.eval_on_selector(".murano-scroll", "(e) => e.scrollLeft") >= layout["maxScroll"] - 8


def test_eighty_layers_fit_and_label_every_fifth(page):
    widget = LogitLensWidget(make_result(prompts=[EIFFEL], n_layers=80, top_k=2))
    bridge = Bridge(page, widget)
    layout = bridge.layout()
    assert layout["heatH"] <= 460 and not layout["showCellText"]
    labels = [
        t["text"] for t in bridge.texts() if t["x"] < layout["labelW"] and t["y"] < layout["inputY"]
    ]
    numbers = [int(t) for t in labels if t.isdigit()]
    assert 79 in numbers and 0 in numbers
    assert all(n % 5 == 0 for n in numbers if n != 79)


def test_screenshots_light_and_dark(browser):
    paths = []
    for dark in (False, True):
        widget = LogitLensWidget(make_result(prompts=[EIFFEL, COUNT], n_layers=8))
        context = browser.new_context(
            viewport={"width": 1000, "height": 700}, device_scale_factor=1
        )
        page = context.new_page()
        bridge = Bridge(page, widget, dark=dark)
        x, y = bridge.cell_center(5, 3)
        page.mouse.click(x, y)
        bridge.sync()
        page.mouse.move(*bridge.cell_center(4, 6))
        bridge.wait_frames()
        name = "widget_dark.png" if dark else "widget_light.png"
        paths.append(bridge.screenshot(name))
        bg = page.eval_on_selector(".murano-root", "(e) => getComputedStyle(e).backgroundColor")
        fg = page.eval_on_selector(".murano-root", "(e) => getComputedStyle(e).color")
        assert (bg == "rgb(17, 20, 24)") if dark else (bg == "rgb(255, 255, 255)")
        assert (fg == "rgb(230, 237, 243)") if dark else (fg == "rgb(31, 35, 40)")
        # The canvas follows: row labels drawn in the theme's muted colour.
        muted = next(t["fill"] for t in bridge.texts() if t["text"] == "input")
        assert muted == ("#9198a1" if dark else "#59636e")
        context.close()
    assert all(p.exists() and p.stat().st_size > 10_000 for p in paths)
    assert ARTIFACTS in paths[0].parents


def test_theme_follows_prefers_color_scheme_unless_the_host_says_light(browser, widget):
    context = browser.new_context(color_scheme="dark")
    page = context.new_page()
    Bridge(page, widget)
    bg = lambda: page.eval_on_selector(".murano-root", "(e) => getComputedStyle(e).backgroundColor")  # noqa: E731
    assert bg() == "rgb(17, 20, 24)"
    page.evaluate("() => document.body.setAttribute('data-jp-theme-light', 'true')")
    assert bg() == "rgb(255, 255, 255)"
    # JupyterLab's own variables win over the fallbacks.
    page.evaluate("() => document.body.style.setProperty('--jp-layout-color0', 'rgb(1, 2, 3)')")
    assert bg() == "rgb(1, 2, 3)"
    context.close()


def test_cleanup_removes_everything(page, widget):
    bridge = Bridge(page, widget)
    assert page.evaluate("() => window.model.listenerCount()") > 0
    page.evaluate("() => window.cleanup()")
    assert page.evaluate("() => window.model.listenerCount()") == 0
    assert page.evaluate("() => document.querySelectorAll('.murano-root').length") == 0
    # Model events after cleanup do nothing (and raise nothing).
    page.evaluate("() => window.model.kernelSet('layer', 2)")
    bridge.wait_frames()
    assert not page.errors


def test_inconsistent_payload_shows_an_error(page, widget):
    state = widget_state(widget)
    state["_meta"] = {**state["_meta"], "offsets": [0, 5]}
    from harness import serve

    serve(page)
    page.goto(f"{ORIGIN}/index.html")
    page.wait_for_function("window.mountReady === true")
    page.evaluate("(s) => window.mount(s, 0)", state)
    error = page.locator(".murano-error")
    assert error.get_attribute("role") == "alert"
    assert "offsets[1] is 5, expected 9" in error.inner_text()
    assert page.is_hidden(".murano-heatmap")
    assert not page.errors


def test_standalone_render_without_a_kernel(page, widget):
    """renderStandalone: the whole widget from a plain state with base64 sections."""
    from harness import serve

    widget._details = True
    state = widget_state(widget)
    sections = {k: v["__b64__"] for k, v in state["_sections"].items()}
    serve(page)
    page.goto(f"{ORIGIN}/index.html")
    page.wait_for_function("window.mountReady === true")
    page.evaluate(
        """([meta, sections]) => {
             const el = document.getElementById('host');
             window.standalone = window.lens.renderStandalone(el, { _meta: meta, _sections: sections, layer: 2, metric: 'kl' });
             window.debug = el.__muranoDebug;
           }""",
        [state["_meta"], sections],
    )
    page.wait_for_timeout(50)
    state = page.evaluate("() => window.debug.state")
    assert state["layer"] == 2 and state["shownMetric"] == "kl"
    r = page.evaluate("() => window.debug.cellClientRect(1, 1)")
    page.mouse.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    assert page.evaluate("() => window.standalone.model.get('selected')") == {
        "prompt": 0,
        "layer_index": 1,
        "position": 1,
    }
    assert "Layer 1 · position 1" in page.inner_text(".murano-tooltip")
    page.evaluate("() => window.standalone.destroy()")
    assert page.evaluate("() => document.querySelectorAll('.murano-root').length") == 0
    assert not page.errors
