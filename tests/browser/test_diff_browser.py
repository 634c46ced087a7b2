"""The lens-diff widget in headless Chromium: colours, tooltip, keyboard, the round trip.

The page imports the real built front end (``murano_widgets/static/lens_diff.js``) and renders
it with a fake anywidget model fed the Python widget's state, as ``harness.py`` does for the
main widget.
"""

from __future__ import annotations

import pytest
import torch
from diff_checks import check_tooltip
from harness import ARTIFACTS, ORIGIN, STATIC, serve, widget_state

from murano_widgets import LogitLens, PromptBatch, load_demo_model, load_demo_tuned_lens
from murano_widgets.comparison.compare import compare, compare_lenses
from murano_widgets.widgets.diff import LensDiffWidget

SYNCED = ("prompt", "metric", "selected", "_meta", "_sections")

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lens diff test</title>
<link rel="stylesheet" href="/lens_diff.css">
<style>body { margin: 0; padding: 16px; background: #fff; } body.dark { background: #111418; }
#host { width: 900px; }</style></head>
<body><div id="host"></div>
<script type="module">
import widget from "/lens_diff.js";
function revive(value) {
  if (value && typeof value === "object" && "__b64__" in value) {
    const bytes = Uint8Array.from(atob(value.__b64__), (c) => c.charCodeAt(0));
    // One byte into a larger buffer: the view must honour byteOffset (and copy when unaligned).
    const buffer = new ArrayBuffer(bytes.length + 8);
    new Uint8Array(buffer, 1, bytes.length).set(bytes);
    return new DataView(buffer, 1, bytes.length);
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v)]));
  }
  return value;
}
window.mount = (state) => {
  const values = revive(state);
  const listeners = new Map();
  const model = {
    sent: [],
    get: (name) => values[name],
    set(name, value) { values[name] = value; model.dirty = { ...(model.dirty || {}), [name]: value }; },
    on(event, fn) { if (!listeners.has(event)) listeners.set(event, new Set()); listeners.get(event).add(fn); },
    off(event, fn) { listeners.get(event) && listeners.get(event).delete(fn); },
    save_changes() { if (model.dirty) model.sent.push(JSON.parse(JSON.stringify(model.dirty))); model.dirty = null; },
    send() {},
    kernelSet(name, value) { values[name] = revive(value); (listeners.get("change:" + name) || []).forEach((fn) => fn()); },
  };
  window.model = model;
  const el = document.getElementById("host");
  window.cleanup = widget.render({ model, el });
  window.debug = el.__muranoDiffDebug;
};
window.mountReady = true;
</script></body></html>
"""


@pytest.fixture(scope="module")
def comparisons():
    model = load_demo_model()
    prompts = ["The capital of France is", "one two three four"]
    tuned = compare_lenses(model, prompts, lens_b=load_demo_tuned_lens(model))
    step = LogitLens(model)
    a = step({"prompts": PromptBatch(["The capital of France is"])})["logit_lens"]
    b = step({"prompts": PromptBatch(["The capital of Italy is"])})["logit_lens"]
    prompts_diff = compare(a, b, align="prefix")
    return {"tuned": tuned, "prefix": prompts_diff}


def mount(page, widget, dark: bool = False):
    serve(
        page,
        {
            "/diff.html": ("text/html", PAGE),
            "/lens_diff.js": ("text/javascript", (STATIC / "lens_diff.js").read_text("utf-8")),
            "/lens_diff.css": ("text/css", (STATIC / "lens_diff.css").read_text("utf-8")),
        },
    )
    page.goto(f"{ORIGIN}/diff.html")
    page.wait_for_function("window.mountReady === true")
    if dark:
        page.evaluate(
            "() => { document.body.classList.add('dark');"
            " document.body.setAttribute('data-jp-theme-light', 'false'); }"
        )
    page.evaluate("(s) => window.mount(s)", widget_state(widget, SYNCED))
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def pixel(page, i: int, j: int) -> list[int]:
    """The canvas pixel at the centre of cell (row i, position j), once drawn.

    The view redraws on the next animation frame after a change, so two frames pass first.
    """
    return page.evaluate(
        """async ([i, j]) => {
          for (let k = 0; k < 2; k++) await new Promise((done) => requestAnimationFrame(done));
          const r = window.debug.cellClientRect(i, j);
          const c = document.querySelector('.murano-diff-canvas');
          const box = c.getBoundingClientRect();
          const k = c.width / box.width;
          // A corner of the cell, away from its label text.
          const x = Math.floor((r.x + 3 - box.left) * k), y = Math.floor((r.y + 3 - box.top) * k);
          return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
        }""",
        [i, j],
    )


def test_colours_are_centred_on_white_and_signed_by_hue(page, comparisons):
    comparison = comparisons["tuned"]
    widget = LensDiffWidget(comparison)
    mount(page, widget)
    assert page.errors == []
    delta = comparison.delta_prob[:, 0]
    aligned = comparison.aligned[:, 0]
    lengths = comparison.a.lengths
    domain = next(m for m in widget._meta["metrics"] if m["name"] == "delta_prob")["domain"]
    assert domain[0] == -domain[1] > -1.01  # symmetric: zero is the centre
    strong = 0.25 * domain[1]
    seen = {"up": 0, "down": 0, "zero": 0}
    for i in range(len(comparison.layers)):
        for j in range(lengths[0]):
            seq = int(comparison.a.positions(0)[j])
            r, g, b, a = pixel(page, i, j)
            assert a == 255
            if not aligned[i, seq]:
                continue
            value = float(delta[i, seq])
            if abs(value) < 0.002:
                # The centre of the scale is near-white.
                assert min(r, g, b) > 225, (i, j, value, (r, g, b))
                seen["zero"] += 1
            elif value > 0.05 * domain[1]:
                # Orange, and strongly so away from the centre.
                assert r > b + (40 if value > strong else 0), (i, j, value, (r, g, b))
                seen["up"] += 1
            elif value < -0.05 * domain[1]:
                assert b > r + (40 if value < -strong else 0), (i, j, value, (r, g, b))  # blue
                seen["down"] += 1
    assert seen["up"] and seen["down"] and seen["zero"], seen
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-diff").screenshot(path=str(ARTIFACTS / "lens_diff_light.png"))


def test_missing_cells_are_hatched_not_coloured(page, comparisons):
    comparison = comparisons["prefix"]
    widget = LensDiffWidget(comparison, metric="top1_differs")
    mount(page, widget, dark=True)
    assert page.errors == []
    positions = comparison.positions[0, comparison.a.positions(0)]
    assert (positions >= 0).any() and (positions < 0).any()
    for j, partner in enumerate(positions.tolist()):
        colour = page.evaluate("([i, j]) => window.debug.cellColour(i, j)", [0, j])
        assert (colour is None) == (partner < 0)
    # A hatched cell shows the page's dark background between its stripes.
    missing = next(j for j, partner in enumerate(positions.tolist()) if partner < 0)
    r, g, b, _ = pixel(page, 0, missing)
    assert max(r, g, b) < 120
    # The header says how positions were paired, the second token row shows b's tokens.
    note = page.locator(".murano-diff-note").text_content()
    assert "shared token prefix" in note
    page.locator(".murano-diff").screenshot(path=str(ARTIFACTS / "lens_diff_dark_prefix.png"))


def test_tooltip_shows_both_top_k_side_by_side(page, comparisons):
    comparison = comparisons["tuned"]
    widget = LensDiffWidget(comparison)
    mount(page, widget)
    row, position = 2, 1
    r = page.evaluate("([i, j]) => window.debug.cellClientRect(i, j)", [row, position])
    page.mouse.move(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    page.evaluate("() => new Promise((r) => requestAnimationFrame(r))")
    check_tooltip(page, comparison.describe_cell(0, row, position))
    page.locator(".murano-diff").screenshot(path=str(ARTIFACTS / "lens_diff_tooltip.png"))


def test_keyboard_moves_focus_and_pins_a_cell_python_reads_back(page, comparisons):
    comparison = comparisons["tuned"]
    widget = LensDiffWidget(comparison)
    mount(page, widget)
    page.focus(".murano-diff-canvas")
    page.keyboard.press("ArrowRight")  # the first key shows the focus, the next ones move it
    state = page.evaluate("() => window.debug.state")
    start = state["focus"]
    assert state["focused"]
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    state = page.evaluate("() => window.debug.state")
    assert state["focus"] == {
        "layerIndex": start["layerIndex"] - 1,
        "position": start["position"] + 1,
    }
    assert page.locator(".murano-diff-tooltip").is_visible()
    page.keyboard.press("End")
    page.keyboard.press("PageDown")
    focus = page.evaluate("() => window.debug.state.focus")
    assert focus == {"layerIndex": 0, "position": comparison.a.lengths[0] - 1}
    page.keyboard.press("Enter")
    sent = page.evaluate("() => window.model.sent")
    assert sent[-1]["selected"] == {"prompt": 0, "layer_index": 0, "position": focus["position"]}
    widget.set_state(sent[-1])
    assert widget.selected["layer_index"] == 0
    assert widget.selected["delta_prob"] == pytest.approx(
        float(comparison.delta_prob[0, 0, comparison.a.positions(0)[-1]])
    )
    readout = page.locator(".murano-diff-readout").text_content()
    assert "pinned" in readout


def test_prompt_slider_and_metric_menu_sync_both_ways(page, comparisons):
    comparison = comparisons["tuned"]
    widget = LensDiffWidget(comparison)
    mount(page, widget)
    slider = page.locator(".murano-diff-prompt-input")
    assert slider.is_visible()
    slider.fill("1")
    assert page.evaluate("() => window.model.sent.at(-1)") == {"prompt": 1}
    assert page.evaluate("() => window.debug.state.prompt") == 1
    page.select_option(".murano-diff-metric-select", "kl")
    assert page.evaluate("() => window.model.sent.at(-1)") == {"metric": "kl"}
    # KL: a sequential scale, light where the lenses agree (the last layer: KL 0).
    last = len(comparison.layers) - 1
    assert float(torch.nan_to_num(comparison.kl_a_to_b[last, 1]).max()) == 0.0
    # KL 0 is the light end of the scale (magma's #fec488), the largest KL of the prompt darker.
    assert pixel(page, last, 0)[:3] == [254, 196, 136]
    kl = torch.nan_to_num(comparison.kl_a_to_b[:, 1], nan=-1.0)
    row, seq = divmod(int(kl.argmax()), kl.shape[1])
    position = int((comparison.a.positions(1) == seq).nonzero()[0, 0])
    assert sum(pixel(page, row, position)[:3]) < sum([254, 196, 136]) - 150
    page.evaluate("() => window.model.kernelSet('prompt', 0)")
    assert page.evaluate("() => window.debug.state.prompt") == 0
    assert page.errors == []


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_heatmap_metrics_change_colours_the_grid_in_its_unit(page, comparisons, dark):
    """Choosing the change in entropy (a metric Python's registry derives from the heatmap's):
    the grid takes the diverging scale, signed by hue, the legend and tooltip speak bits."""
    comparison = comparisons["tuned"]
    widget = LensDiffWidget(comparison)
    mount(page, widget, dark=dark)
    options = page.locator(".murano-diff-metric-select option").all_text_contents()
    assert "Change in entropy (bits) (b − a)" in options
    assert "Change in rank of the final prediction (0 = top-1) (b − a)" in options
    page.select_option(".murano-diff-metric-select", "delta_entropy")
    assert page.evaluate("() => window.model.sent.at(-1)") == {"metric": "delta_entropy"}
    widget.set_state({"metric": "delta_entropy"})
    entry = next(m for m in widget._meta["metrics"] if m["name"] == "delta_entropy")
    low, high = entry["domain"]
    assert low == -high > -100
    delta = comparison.metric_deltas["delta_entropy"][:, 0]
    seen = {"up": 0, "down": 0}
    for i in range(len(comparison.layers)):
        for j in range(comparison.a.lengths[0]):
            value = float(delta[i, int(comparison.a.positions(0)[j])])
            if value != value or abs(value) < 0.2 * high:
                continue
            r, _, b, _ = pixel(page, i, j)
            if value > 0:
                assert r > b + 30, (i, j, value, (r, b))  # orange: more entropy under b
                seen["up"] += 1
            else:
                assert b > r + 30, (i, j, value, (r, b))  # blue: less
                seen["down"] += 1
    assert seen["up"] + seen["down"] > 0, seen
    legend = page.locator(".murano-diff-legend").text_content()
    assert "Change in entropy (bits) (b − a)" in legend
    ticks = page.locator(".murano-diff-legend-ticks span").all_text_contents()
    assert ticks[1] == "0" and ticks[0].startswith("−") and ticks[2].startswith("+")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = f"lens_diff_entropy_{'dark' if dark else 'light'}"
    page.locator(".murano-diff").screenshot(path=str(ARTIFACTS / f"{shot}.png"))
    # The tooltip: a's entropy → b's, and the change, in bits.
    row, position = 2, 1
    r = page.evaluate("([i, j]) => window.debug.cellClientRect(i, j)", [row, position])
    page.mouse.move(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    page.evaluate("() => new Promise((r) => requestAnimationFrame(r))")
    text = page.evaluate("() => window.debug.tooltipText()")
    seq = int(comparison.a.positions(0)[position])
    va, vb = (float(t[row, 0, seq]) for t in comparison.sides("entropy"))
    change = vb - va
    sign = "+" if change > 0 else "−"
    assert f"Δ entropy: {va:.2f} bits → {vb:.2f} bits ({sign}{abs(change):.2f} bits)" in text, text
    assert page.errors == []
    page.locator(".murano-diff").screenshot(path=str(ARTIFACTS / f"{shot}_tooltip.png"))
