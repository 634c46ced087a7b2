"""The data-set widget (``LensDataset.show()``) in headless Chromium.

A test page imports the real built front end (``murano_widgets/static/lens_dataset.js``) and
renders it with a fake anywidget model fed the Python chart's state; what the page sends back
is applied to the Python widget as the kernel would (``set_state``), and Python's changes are
pushed back into the page. Hovering a layer shows its values, clicking it lists the prompts by
the answer's rank there (checked against an ordering computed here with numpy), and clicking a
prompt makes Python open that prompt's heatmap.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from harness import ARTIFACTS, ORIGIN, ROOT, encode

from murano_widgets import LensDataset, LogitLensWidget, lens_dataset

pytestmark = pytest.mark.browser

STATIC = ROOT / "murano_widgets" / "static"
SYNCED = (
    "layer",
    "answer_set",
    "lens_name",
    "order",
    "metric",
    "open_request",
    "status",
    "_meta",
    "_data",
)

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>murano data-set widget test</title>
<link rel="stylesheet" href="/lens_dataset.css">
<style>body { margin: 0; padding: 16px; background: var(--page-bg, #fff); }
body.dark { --page-bg: #111418; } #host { width: 760px; }</style>
</head>
<body>
<div id="host"></div>
<script type="module">
import widget, * as ds from "/lens_dataset.js";
window.ds = ds;
function revive(value) {
  if (value && typeof value === "object" && "__b64__" in value) {
    const bytes = Uint8Array.from(atob(value.__b64__), (c) => c.charCodeAt(0));
    const buffer = new ArrayBuffer(bytes.length + 3);  // at an odd offset: alignment matters
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
  let dirty = {};
  const model = {
    sent: [],
    get: (name) => values[name],
    set(name, value) { values[name] = value; dirty[name] = value; (listeners.get("change:" + name) || new Set()).forEach((f) => f()); },
    on(event, fn) { if (!listeners.has(event)) listeners.set(event, new Set()); listeners.get(event).add(fn); },
    off(event, fn) { if (!event) listeners.clear(); else if (!fn) listeners.delete(event); else listeners.get(event)?.delete(fn); },
    save_changes() { if (Object.keys(dirty).length) model.sent.push(JSON.parse(JSON.stringify(dirty))); dirty = {}; },
    send() {},
    kernelSet(name, value) { values[name] = revive(value); (listeners.get("change:" + name) || new Set()).forEach((f) => f()); },
  };
  window.model = model;
  window.cleanup = widget.render({ model, el: document.getElementById("host") });
  return true;
};
window.ready = true;
</script>
</body>
</html>
"""


class ChartBridge:
    """One data-set widget in one page, with the kernel's round trip between them."""

    def __init__(self, page, view, dark: bool = False):
        self.page, self.view, self.chart = page, view, view.chart
        files = {
            "/index.html": ("text/html", PAGE),
            "/lens_dataset.js": ("text/javascript", (STATIC / "lens_dataset.js").read_text()),
            "/lens_dataset.css": ("text/css", (STATIC / "lens_dataset.css").read_text()),
        }

        def handle(route):
            path = route.request.url[len(ORIGIN) :].split("?")[0]
            if route.request.url.startswith(ORIGIN) and path in files:
                kind, body = files[path]
                route.fulfill(status=200, content_type=kind, body=body)
            else:
                page.errors.append(f"blocked request {route.request.url}")
                route.abort()

        page.route("**/*", handle)
        page.goto(f"{ORIGIN}/index.html")
        page.wait_for_function("window.ready === true")
        if dark:
            page.evaluate("() => document.body.classList.add('dark')")
            page.evaluate("() => document.body.setAttribute('data-jp-theme-light', 'false')")
        state = self.chart.get_state()
        page.evaluate("(s) => window.mount(s)", encode({k: state[k] for k in SYNCED}))

    def sync(self) -> list[dict]:
        """Delivers what the page sent to Python, then the traits Python changed back."""
        messages = self.page.evaluate("() => window.model.sent.splice(0)")
        changed: list[str] = []

        def handler(change):
            changed.append(change["name"])

        for message in messages:
            changed.clear()
            self.chart.observe(handler, names=list(SYNCED))
            try:
                self.chart.set_state(message)
            finally:
                self.chart.unobserve(handler, names=list(SYNCED))
            for name in dict.fromkeys(changed):
                if name in message and getattr(self.chart, name) == message[name]:
                    continue
                value = encode(self.chart.get_state(name)[name])
                self.page.evaluate("([n, v]) => window.model.kernelSet(n, v)", [name, value])
        return messages

    def column_point(self, index: int) -> tuple[float, float]:
        """Page coordinates of layer column ``index``, halfway up the chart."""
        box = self.page.locator(".murano-ds-chart").bounding_box()
        n = len(self.view.dataset.layers)
        # The chart's own geometry (640 x 260 user units, margins 48 / 16): see chart.js.
        x_units = 48 + index * (640 - 48 - 16) / max(n - 1, 1)
        return box["x"] + x_units * box["width"] / 640, box["y"] + box["height"] / 2


def expected_order(data: LensDataset, name: str, row: int) -> list[int]:
    """Prompts with an answer, by rank at the layer's row (missing last), then probability,
    index."""
    ranks = data.answer_ranks[name][row]
    probs = np.nan_to_num(data.answer_probs[name][row].astype(float), nan=-1.0)
    has = [p for p, forms in enumerate(data.answers[name]) if forms is not None]
    return sorted(has, key=lambda p: (ranks[p] < 0, ranks[p], -probs[p], p))


PROMPTS = [
    "The capital of France is",
    "Monday Tuesday",
    "one two three four five six seven",
    "The Eiffel Tower is in the city of",
    "Alice met Bob. Alice gave",
    "The capital of Italy is <script>alert(1)</script>",
    "Zürich café",
    "one two",
]
ANSWERS = {
    "next": [" Paris", " Wednesday", " eight", " Paris", " Bob", " Rome", None, " three"],
    "other": [" Rome", " Friday", " nine", None, " Alice", " Paris", " naïve", " four"],
}


@pytest.fixture(scope="module")
def data(load_tiny):
    return lens_dataset(load_tiny("gpt2"), PROMPTS, ANSWERS, batch_size=3, progress=False)


def test_hover_a_layer_shows_its_values(page, data):
    view = data.show()
    bridge = ChartBridge(page, view)
    assert page.locator(".murano-ds-line").count() == 2, "one curve per answer set"
    table = data.summary()
    for column in (0, len(data.layers) - 1):
        page.mouse.move(*bridge.column_point(column))
        text = page.inner_text(".murano-ds-readout")
        assert f"Layer {data.layers[column]}" in text
        for name in data.answers:
            row = table[(table["answer_set"] == name) & (table["layer"] == data.layers[column])]
            expected = page.evaluate(
                "(v) => window.ds.formatInterval(...v)",
                [
                    float(row[c].iloc[0])
                    for c in ("answer_prob_mean", "answer_prob_ci_low", "answer_prob_ci_high")
                ],
            )
            assert expected in text, (name, expected, text)
            percent = f"{float(row['answer_prob_mean'].iloc[0]) * 100:.1f}"
            assert percent.rstrip("0").rstrip(".") in text
    assert page.locator(".murano-ds-hover").count() == 1
    page.mouse.move(2, 2)
    assert "Hover over a layer" in page.inner_text(".murano-ds-readout")
    assert not page.errors, page.errors


def test_click_a_layer_lists_prompts_by_rank_and_a_prompt_opens_its_heatmap(page, data):
    view = data.show()
    bridge = ChartBridge(page, view)
    column = 1
    page.mouse.click(*bridge.column_point(column))
    assert {"layer": data.layers[column]} in bridge.sync()
    assert view.chart.layer == data.layers[column]
    shown = [
        int(v)
        for v in page.eval_on_selector_all(
            ".murano-ds-prompt", "els => els.map((e) => e.dataset.prompt)"
        )
    ]
    assert shown == expected_order(data, "next", column)
    # Prompt text is text, never HTML.
    assert page.locator(".murano-ds-list script").count() == 0
    assert "<script>alert(1)</script>" in page.inner_text(".murano-ds-list")

    # Worst first, then the other answer set.
    page.click(".murano-ds-button:not(.murano-ds-more)")
    bridge.sync()
    assert view.chart.order == "worst"
    worst = [
        int(v)
        for v in page.eval_on_selector_all(
            ".murano-ds-prompt", "els => els.map((e) => e.dataset.prompt)"
        )
    ]
    ranks = data.answer_ranks["next"][column]
    valid = [p for p in worst if ranks[p] >= 0]
    assert [ranks[p] for p in valid] == sorted((ranks[p] for p in valid), reverse=True)
    page.select_option(".murano-ds-prompts-bar .murano-ds-select", "other")
    bridge.sync()
    page.click(".murano-ds-button:not(.murano-ds-more)")
    bridge.sync()
    assert view.chart.answer_set == "other" and view.chart.order == "best"
    shown = [
        int(v)
        for v in page.eval_on_selector_all(
            ".murano-ds-prompt", "els => els.map((e) => e.dataset.prompt)"
        )
    ]
    assert shown == expected_order(data, "other", column)

    # Choose a prompt: Python opens its heatmap below the chart.
    target = shown[0]
    page.click(f".murano-ds-prompt[data-prompt='{target}']")
    sent = bridge.sync()
    assert any(m.get("open_request", {}).get("prompt") == target for m in sent), sent
    assert isinstance(view.heatmap, LogitLensWidget)
    assert view.opened == (target, "other")
    assert view.heatmap.result.prompts == [PROMPTS[target]]
    assert view.children[-1] is view.heatmap
    page.wait_for_function(
        "() => document.querySelector('.murano-ds-status').textContent.startsWith('Opened')"
    )
    assert f"Opened prompt {target}" in page.inner_text(".murano-ds-status")
    assert not page.errors, page.errors


def test_keyboard_moves_and_chooses_a_layer(page, data):
    view = data.show()
    bridge = ChartBridge(page, view)
    page.focus(".murano-ds-chart")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert f"Layer {data.layers[1]}" in page.inner_text(".murano-ds-readout")
    page.keyboard.press("Enter")
    assert {"layer": data.layers[1]} in bridge.sync()
    assert page.locator(".murano-ds-chosen").count() == 1
    assert not page.errors, page.errors


def test_a_loaded_data_set_says_why_no_heatmap_opens(page, data, tmp_path):
    data.save(tmp_path / "d")
    view = LensDataset.load(tmp_path / "d").show()
    bridge = ChartBridge(page, view, dark=True)
    page.mouse.click(*bridge.column_point(0))
    bridge.sync()
    page.locator(".murano-ds-prompt").first.click()
    status = page.inner_text(".murano-ds-status")
    assert "without its model" in status and "show(model=" in status
    assert not any("open_request" in m for m in bridge.sync()), "nothing is asked of Python"
    assert view.heatmap is None
    # Dark theme: text is light on a dark background.
    colour = page.eval_on_selector(".murano-ds-root", "e => getComputedStyle(e).color")
    assert sum(int(c) for c in re.findall(r"\d+", colour)[:3]) > 500, colour
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-ds-root").screenshot(path=str(ARTIFACTS / "dataset_widget_dark.png"))
    assert not page.errors, page.errors


def test_screenshot_light(page, data):
    view = data.show()
    bridge = ChartBridge(page, view)
    page.mouse.click(*bridge.column_point(len(data.layers) - 1))
    bridge.sync()
    page.mouse.move(*bridge.column_point(1))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-ds-root").screenshot(path=str(ARTIFACTS / "dataset_widget_light.png"))
    assert not page.errors, page.errors


def test_the_data_set_exports_to_a_page_that_works_offline(offline_page, data, tmp_path):
    """The chart's HTML export (the one widget base's save_html): curves, a hovered layer's
    values and the prompt list work with no kernel; opening a heatmap says it needs one."""
    page = offline_page
    view = data.show()
    view.chart.layer = data.layers[1]
    path = view.save_html(tmp_path / "data.html")
    page.goto(path.as_uri())
    page.wait_for_selector(".murano-ds-line")
    assert page.title() == view.chart._meta["title"]
    assert page.locator(".murano-ds-line").count() == 2
    assert page.locator(".murano-ds-prompt").count() > 0, "the chosen layer's prompts are listed"
    page.locator(".murano-ds-prompt").first.click()
    assert "kernel" in page.inner_text(".murano-ds-status")
    assert not page.refused, page.refused


def series_palette(variant: str) -> list[str]:
    """The series palette's light or dark values, read from js/src/shared/theme.css in order."""
    theme = (ROOT / "js" / "src" / "shared" / "theme.css").read_text()
    pattern = r"--murano-series-\d+: var\(--murano-light, (#\w{6})\) var\(--murano-dark, (#\w{6})\)"
    return [pair[variant == "dark"] for pair in re.findall(pattern, theme)]


def rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def curves(names: list[str], n: int = 12, layers: int = 8) -> LensDataset:
    """A data set whose sets' curves rise at different layers (so each is seen in a screenshot)."""
    rng = np.random.default_rng(0)
    depth = np.linspace(0, 1, layers)[:, None]
    probs, ranks = {}, {}
    for k, name in enumerate(names):
        rise = 1 / (1 + np.exp(-10 * (depth - 0.15 - 0.09 * k)))
        noise = rng.normal(0, 0.05, (layers, n))
        probs[name] = np.clip(rise * (0.95 - 0.05 * k) + noise, 0, 1).astype(np.float32)
        ranks[name] = np.where(probs[name] > 0.5, 0, 3).astype(np.int64)
    return LensDataset(
        prompts=[f"prompt {i}" for i in range(n)],
        layers=list(range(layers)),
        answers={name: [[f" a{i}"] for i in range(n)] for name in names},
        answer_probs=probs,
        answer_ranks=ranks,
        entropy=rng.random((layers, n)).astype(np.float32),
        kl_to_final=rng.random((layers, n)).astype(np.float32),
        top1_tokens=np.zeros((layers, n), dtype=np.int64),
        token_strings={0: " x"},
        provenance={"model_name": "synthetic", "lens_kind": "logit", "n_model_layers": layers},
        named_sets=True,
    )


@pytest.mark.parametrize("variant", ["light", "dark"])
def test_the_curves_take_the_series_palette_in_order(page, variant):
    """Issue 21, item 10c: the curves' colours (blue/cyan, orange/olive) were hard to tell apart;
    set k now draws in the theme's series colour k (its light or dark value), then the colours
    again, dashed; each legend swatch shows its curve's colour and dash."""
    names = [f"set {k}" for k in range(8)]
    ChartBridge(page, curves(names).show(), dark=variant == "dark")
    palette = series_palette(variant)
    assert len(palette) == 6
    drawn = page.eval_on_selector_all(
        ".murano-ds-line",
        "els => els.map((e) => [e.dataset.set, getComputedStyle(e).stroke,"
        " e.getAttribute('stroke-dasharray')])",
    )
    swatches = page.eval_on_selector_all(
        ".murano-ds-legend .murano-ds-swatch line",
        "els => els.map((e) => [getComputedStyle(e).stroke, e.getAttribute('stroke-dasharray')])",
    )
    want = [rgb(palette[k % 6]) for k in range(8)]
    assert [d[0] for d in drawn] == names
    assert [d[1] for d in drawn] == want
    assert [d[2] for d in drawn] == ["none"] * 6 + ["6 3"] * 2
    assert swatches == [[d[1], d[2]] for d in drawn]
    bands = page.eval_on_selector_all(
        ".murano-ds-band", "els => els.map((e) => getComputedStyle(e).fill)"
    )
    assert bands == want
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-ds-root").screenshot(
        path=str(ARTIFACTS / f"dataset_palette_{variant}.png")
    )
    assert not page.errors, page.errors
