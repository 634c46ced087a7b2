"""The "why" panel, the component view and sublayer rows in headless Chromium (issue 23, item 4).

The demo model's lens with the step's own direct logit attribution (``decompose=True``, heads,
a row after each layer's attention, a foil): the panel's bars are read back from the page and
compared with the result's floats, computed here again from ``result.contributions`` (the top 8
units by size in model order, "other", "bias", summing to ``top1_logits``); the component view
is driven with the keyboard; the choices sync with Python; the export works with no kernel.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from harness import Bridge

from murano_widgets import LogitLensWidget, load_demo_model
from murano_widgets.results import LensResults
from murano_widgets.run import run_logit_lens

pytestmark = pytest.mark.browser

PROMPTS = ["The capital of France is", "Monday, Tuesday, Wednesday,"]
TOP = 8
# The shared diverging scale (js/src/shared/colour.js DIVERGING_STOPS).
DIVERGING = [
    "#08519c",
    "#3182bd",
    "#6baed6",
    "#c6dbef",
    "#f4f4f2",
    "#fdd0a2",
    "#fd8d3c",
    "#e6550d",
    "#a63603",
]


@pytest.fixture(scope="module")
def result():
    return run_logit_lens(
        load_demo_model(),
        PROMPTS,
        answers=[" Paris", " Thursday"],
        foils=[" London", None],
        targets=[" London"],
        decompose=True,
        heads=True,
        sites=("resid_mid", "resid_post"),
    )


@pytest.fixture
def widget(result):
    return LogitLensWidget(result)


# -- What the panel should show, from the result ------------------------------------------------


def units(labels: list[str], heads: bool) -> list[tuple[str, list[int]]]:
    """The panel's units: a layer's heads and attention bias summed as "L3 attn" unless heads."""
    out: list[tuple[str, list[int]]] = []
    for k, label in enumerate(labels):
        head = re.fullmatch(r"L(\d+)\.H(\d+)", label)
        part = re.fullmatch(r"L(\d+)\.(attn|mlp|attn_bias)", label)
        layer = head.group(1) if head else part.group(1) if part else None
        if layer is not None and not heads and (head or part.group(2) == "attn_bias"):
            name = f"L{layer} attn"
            if out and out[-1][0] == name:
                out[-1][1].append(k)
            else:
                out.append((name, [k]))
        elif head:
            out.append((f"L{layer} H{head.group(2)}", [k]))
        elif part:
            word = {"attn": "attn", "mlp": "MLP", "attn_bias": "attn bias"}[part.group(2)]
            out.append((f"L{layer} {word}", [k]))
        else:
            out.append((label, [k]))
    return out


def expected_bars(parts, bias: float, labels: list[str], heads: bool) -> list[tuple[str, float]]:
    """The top units by |part| in model order, then other (the rest) and bias."""
    values = np.asarray(parts, dtype=np.float64)
    grouped = []
    for name, members in units(labels, heads):
        finite = values[members][np.isfinite(values[members])]
        if finite.size:
            grouped.append((name, float(finite.sum())))
    order = sorted(range(len(grouped)), key=lambda i: (-abs(grouped[i][1]), i))[:TOP]
    bars = [grouped[i] for i in sorted(order)]
    rest = [grouped[i][1] for i in range(len(grouped)) if i not in order]
    if rest:
        bars.append((f"other ({len(rest)})", sum(rest)))
    bars.append(("bias", bias))
    return bars


def logit_text(value: float) -> str:
    """formatLogit of js/src/heatmap/attribution.js."""
    text = f"{abs(value):.2f}"
    if float(text) == 0:
        return "0.00"
    return ("−" if value < 0 else "+") + text


def display(token: str) -> str:
    return token.replace(" ", "␣").replace("\n", "↵")


def panel(page) -> dict:
    """The panel as the page shows it: its title, bars (label, printed value, exact value) and
    total."""
    return page.evaluate(
        """() => {
          const p = document.querySelector('.murano-why');
          return {
            hidden: p.hidden,
            title: p.querySelector('.murano-why-title').textContent,
            where: p.querySelector('.murano-why-where').textContent,
            bars: [...p.querySelectorAll('.murano-why-row')].map((r) => [
              r.dataset.label, r.querySelector('.murano-why-value').textContent, Number(r.dataset.value),
              r.getAttribute('role'), r.getAttribute('aria-label')]),
            totalLabel: p.querySelector('.murano-why-total-label').textContent,
            total: p.querySelector('.murano-why-total-value').textContent,
            totalValue: Number(p.querySelector('.murano-why-total-value').dataset.value),
            note: p.querySelector('.murano-why-note').textContent,
          };
        }"""
    )


def check_panel(shown: dict, bars: list[tuple[str, float]], total: float) -> None:
    assert [b[0] for b in shown["bars"]] == [b[0] for b in bars]
    for (label, text, value, role, aria), (_, want) in zip(shown["bars"], bars, strict=True):
        assert math.isclose(value, want, abs_tol=1e-4), (label, value, want)
        assert text == logit_text(want), (label, text, want)
        assert role == "listitem" and aria.endswith(f": {text}")
    assert math.isclose(sum(b[2] for b in shown["bars"]), total, abs_tol=1e-3), "the bars sum to it"
    assert math.isclose(shown["totalValue"], total, abs_tol=1e-5)
    assert shown["total"] == logit_text(total)


# -- The tests ----------------------------------------------------------------------------------


def test_hover_and_pin_show_the_cells_top_components_as_the_result_has_them(page, widget, result):
    bridge = Bridge(page, widget)
    bridge.sync()  # the detail sections (the attribution among them) arrive
    labels = result.component_labels
    assert not panel(page)["hidden"]
    # Hover row 7 (layer 3 after attention) of prompt 0 at position 2.
    row, position = 6, 2
    seq = result.positions(0).tolist()[position]
    page.mouse.move(*bridge.cell_center(row, position))
    bridge.wait_frames()
    shown = panel(page)
    cell = (row, 0, seq)
    assert shown["title"] == f"Why {display(result.predicted_words[row][0][seq])}?"
    assert shown["where"] == f"L3 attn · position {position}"
    assert shown["totalLabel"] == "logit"
    check_panel(
        shown,
        expected_bars(
            result.contributions[cell], float(result.contribution_bias[cell]), labels, False
        ),
        float(result.top1_logits[cell]),
    )
    assert "after L3 attn have no part" in shown["note"]
    # The tooltip names the sublayer row.
    assert "Layer 3 after attention · position 2" in page.inner_text(".murano-tooltip")

    # Pin another cell; the pointer leaves the widget: the panel shows the pinned cell.
    row, position = 11, 4
    page.mouse.click(*bridge.cell_center(row, position))
    bridge.sync()
    assert widget.selected["layer_index"] == row and widget.selected["position"] == position
    assert widget.selected["address"] == "L5.resid_post", "which of layer 5's two rows"
    page.mouse.move(1, 1)
    bridge.wait_frames()
    seq = result.positions(0).tolist()[position]
    cell = (row, 0, seq)
    shown = panel(page)
    assert shown["where"] == f"L5 · position {position}"
    check_panel(
        shown,
        expected_bars(
            result.contributions[cell], float(result.contribution_bias[cell]), labels, False
        ),
        float(result.top1_logits[cell]),
    )
    assert shown["note"] == "", "the last row holds every component"


def test_the_explain_menu_and_the_heads_box_sync_with_python(page, widget, result):
    bridge = Bridge(page, widget)
    bridge.sync()
    labels = result.component_labels
    # The menu: the top-1, the answer (against the foil), the target.
    options = page.eval_on_selector_all(".murano-why-select option", "os => os.map((o) => o.value)")
    assert options == ["top1", "answer", "target: London"]
    page.select_option(".murano-why-select", "answer")
    bridge.sync()
    assert widget.explain == "answer"
    shown = panel(page)
    assert shown["title"] == "Why the answer ␣Paris rather than ␣London?"
    assert shown["totalLabel"] == "logit difference"
    row = 11  # the highlighted row (the last), at the prompt's last position
    parts = result.answer_row_contributions[row, 0]
    bias = float(result.answer_row_bias[row, 0])
    check_panel(
        shown, expected_bars(parts, bias, labels, False), float(np.nansum(parts.numpy()) + bias)
    )
    # Python chooses the target; heads split each layer's attention.
    widget.explain = "target: London"
    bridge.kernel_set("explain")
    bridge.wait_frames()
    assert page.input_value(".murano-why-select") == "target: London"
    page.check(".murano-why-heads-box")
    bridge.wait_frames()
    last = len(result.positions(0)) - 1
    seq = result.positions(0).tolist()[last]
    parts = result.target_contributions[row, 0, seq, 0]
    bias = float(result.target_bias[row, 0, seq, 0])
    shown = panel(page)
    assert shown["title"] == "Why target ␣London?"
    bars = expected_bars(parts, bias, labels, True)
    assert any(" H" in label for label, _ in bars), "heads are units of their own"
    check_panel(shown, bars, float(np.nansum(parts.numpy()) + bias))
    # The second prompt has an answer but no foil where the first has one: nothing to explain.
    widget.explain = "answer"
    bridge.kernel_set("explain")
    widget.prompt = 1
    bridge.kernel_set("prompt")
    bridge.wait_frames()
    shown = panel(page)
    assert shown["bars"] == [] and "no foil" in shown["note"]


def test_the_answer_is_explained_at_the_hovered_cell(page, result):
    """explain="answer": the hovered cell's own answer (its first token as the next token,
    minus the foil's), from result.answer_token_contributions, not the prompt's last
    position's; the component view fills every column with it."""
    widget = LogitLensWidget(result, explain="answer")
    bridge = Bridge(page, widget)
    bridge.sync()
    labels = result.component_labels
    seqs = result.positions(0).tolist()
    row, position = 7, 2  # layer 3's block output, well before the prompt's end
    assert position < len(seqs) - 1
    page.mouse.move(*bridge.cell_center(row, position))
    bridge.wait_frames()
    shown = panel(page)
    cell = (row, 0, seqs[position])
    parts = result.answer_token_contributions[cell]
    bias = float(result.answer_token_bias[cell])
    assert shown["title"] == "Why the answer ␣Paris rather than ␣London?"
    assert shown["where"] == f"L3 · position {position}"
    assert shown["totalLabel"] == "logit difference"
    check_panel(
        shown, expected_bars(parts, bias, labels, False), float(np.nansum(parts.numpy()) + bias)
    )
    # Not the last position's (answer_row_contributions): the cell's own.
    last = result.answer_row_contributions[row, 0]
    assert not np.allclose(parts.numpy(), last.numpy(), equal_nan=True)
    # A sublayer row's cell, heads split.
    page.check(".murano-why-heads-box")
    row, position = 4, 1  # layer 2 after its attention
    page.mouse.move(*bridge.cell_center(row, position))
    bridge.wait_frames()
    cell = (row, 0, seqs[position])
    parts = result.answer_token_contributions[cell]
    bias = float(result.answer_token_bias[cell])
    shown = panel(page)
    assert shown["where"] == f"L2 attn · position {position}"
    check_panel(
        shown, expected_bars(parts, bias, labels, True), float(np.nansum(parts.numpy()) + bias)
    )
    assert "after L2 attn have no part" in shown["note"]
    page.uncheck(".murano-why-heads-box")

    # The component view: every column holds each unit's part of that position's answer.
    page.mouse.move(1, 1)
    page.select_option(".murano-view-select", "components")
    bridge.sync()
    comp = "window.debug.components"
    grouped = units(labels, False)
    row = 11  # the highlighted row
    for j, seq in enumerate(seqs):
        want_parts = result.answer_token_contributions[row, 0, seq].numpy()
        for u, (_, members) in enumerate(grouped):
            want = float(want_parts[members].sum())
            got = page.evaluate(f"([u, j]) => {comp}.value(u, j)", [u, j])
            assert math.isclose(got, want, abs_tol=1e-4), (u, j, got, want)
    caption = page.inner_text(".murano-comp-caption")
    assert "the answer (minus the foil's) as each position's next token" in caption, caption
    page.focus(".murano-comp-canvas")
    page.keyboard.press("ArrowLeft")
    bridge.wait_frames()
    readout = page.inner_text(".murano-readout")
    assert "to the logit of ␣Paris minus that of ␣London at L5." in readout, readout
    shown = panel(page)
    j = len(seqs) - 2
    parts = result.answer_token_contributions[row, 0, seqs[j]]
    bias = float(result.answer_token_bias[row, 0, seqs[j]])
    assert shown["where"] == f"L5 · position {j}"
    check_panel(
        shown, expected_bars(parts, bias, labels, False), float(np.nansum(parts.numpy()) + bias)
    )


def test_a_lens_without_the_attribution_sets_explain_and_view_back_in_python(page, result):
    """The lens menu switches to a lens that cannot explain the answer: the page shows the
    top-1 and the heatmap, and Python's explain and view say the same."""
    bare = run_logit_lens(
        load_demo_model(),
        PROMPTS,
        answers=[" Paris", " Thursday"],
        targets=[" London"],
        sites=("resid_mid", "resid_post"),
    )
    widget = LogitLensWidget(
        LensResults({"dla": result, "bare": bare}), explain="answer", view="components"
    )
    bridge = Bridge(page, widget)
    bridge.sync()
    assert page.input_value(".murano-why-select") == "answer"
    assert page.is_visible(".murano-comp-canvas")
    page.select_option(".murano-lens-select", "bare")
    bridge.sync()
    assert widget.lens_name == "bare"
    assert (widget.explain, widget.view) == ("top1", "layers")
    assert page.is_hidden(".murano-why") and page.is_visible(".murano-canvas")
    state = bridge.state()
    assert (state["explain"], state["view"]) == ("top1", "layers")
    # Back: the attribution again, explaining the top-1 in the heatmap, as Python says.
    page.select_option(".murano-lens-select", "dla")
    bridge.sync()
    assert (widget.lens_name, widget.explain, widget.view) == ("dla", "top1", "layers")
    assert page.input_value(".murano-why-select") == "top1"
    assert not panel(page)["hidden"]


def diverging(value: float, top: float) -> np.ndarray:
    """The diverging scale's colour of a part (js/src/heatmap/attribution.js partColour)."""
    t = 0.5 + 0.5 * max(-1.0, min(1.0, value / top))
    pos = t * (len(DIVERGING) - 1)
    i = min(len(DIVERGING) - 2, int(pos))
    f = pos - i
    a, b = (np.array([int(c[k : k + 2], 16) for k in (1, 3, 5)]) for c in DIVERGING[i : i + 2])
    return np.round(a + (b - a) * f)


def test_the_component_view_by_keyboard_and_pointer(page, widget, result):
    bridge = Bridge(page, widget)
    bridge.sync()
    page.select_option(".murano-view-select", "components")
    bridge.sync()
    assert widget.view == "components"
    assert page.is_hidden(".murano-heatmap") and page.is_visible(".murano-comp-canvas")
    label = page.get_attribute(".murano-comp-canvas", "aria-label")
    assert "Component view: 13 components" in label and "Arrow keys" in label
    assert page.get_attribute(".murano-comp-canvas", "role") == "application"
    comp = "window.debug.components"
    names = page.evaluate(f"() => {comp}.units")
    assert names == [name for name, _ in units(result.component_labels, False)]
    # Every cell's value is the unit's part of its position's top-1 logit at the last row.
    row = 11
    n = len(result.positions(0))
    grouped = units(result.component_labels, False)
    top = 0.0
    for j, seq in enumerate(result.positions(0).tolist()):
        parts = result.contributions[row, 0, seq].numpy()
        for u, (_, members) in enumerate(grouped):
            want = float(parts[members].sum())
            got = page.evaluate(f"([u, j]) => {comp}.value(u, j)", [u, j])
            assert math.isclose(got, want, abs_tol=1e-4), (u, j, got, want)
            top = max(top, abs(want))
    top_shown = page.evaluate(f"() => {comp}.max")
    assert top_shown >= top
    # A cell's colour is its part's on the diverging scale (read clear of its text).
    u, j = len(grouped) - 1, n - 1
    r = page.evaluate(f"([u, j]) => {comp}.cellClientRect(u, j)", [u, j])
    pixel = page.evaluate(
        """([x, y]) => { const c = document.querySelector('.murano-comp-canvas');
             const b = c.getBoundingClientRect(); const k = c.width / b.width;
             return Array.from(c.getContext('2d').getImageData(Math.floor((x - b.left) * k), Math.floor((y - b.top) * k), 1, 1).data); }""",
        [r["x"] + 3, r["y"] + r["h"] - 3],
    )
    want = diverging(
        float(result.contributions[row, 0, result.positions(0)[j]].numpy()[grouped[u][1]].sum()),
        top_shown,
    )
    assert np.abs(np.array(pixel[:3]) - want).max() <= 3, (pixel, want)

    # The keyboard: focus starts at the top unit of the last position; arrows move it.
    page.focus(".murano-comp-canvas")
    bridge.wait_frames()
    state = page.evaluate(f"() => {comp}.state")
    assert state["focused"] and state["focus"] == {
        "layerIndex": len(grouped) - 1,
        "position": n - 1,
    }
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowLeft")
    bridge.wait_frames()
    assert page.evaluate(f"() => {comp}.state")["focus"] == {
        "layerIndex": len(grouped) - 2,
        "position": n - 2,
    }
    unit, members = grouped[-2]
    seq = result.positions(0).tolist()[n - 2]
    value = float(result.contributions[row, 0, seq].numpy()[members].sum())
    token = display(result.predicted_words[row][0][seq])
    readout = page.inner_text(".murano-readout")
    assert readout.endswith(f": {logit_text(value)} to the logit of {token} at L5."), readout
    assert f"{unit} · position {n - 2}" in page.inner_text(".murano-tooltip")
    # The panel follows the focused cell, its unit marked.
    shown = panel(page)
    assert shown["where"] == f"L5 · position {n - 2}"
    current = page.eval_on_selector_all(
        ".murano-why-current", "rs => rs.map((r) => r.dataset.label)"
    )
    assert current in ([unit], []), current  # marked where it is one of the bars shown
    # Enter pins the position (the highlighted row's cell); Escape unpins.
    page.keyboard.press("Enter")
    bridge.sync()
    assert widget.selected["layer_index"] == row and widget.selected["position"] == n - 2
    page.keyboard.press("Escape")
    bridge.sync()
    assert widget.selected is None
    # Python switches back.
    widget.view = "layers"
    bridge.kernel_set("view")
    bridge.wait_frames()
    assert page.is_visible(".murano-canvas") and page.is_hidden(".murano-components")


def test_sublayer_rows_are_labelled_on_the_axis_and_the_slider(page, widget):
    bridge = Bridge(page, widget)
    layout = bridge.layout()
    labels = [
        t["text"]
        for t in sorted(bridge.texts(), key=lambda t: t["y"])
        if t["x"] < layout["labelW"]
        and layout["heatY"] <= t["y"] < layout["heatY"] + layout["heatH"]
    ]
    assert labels == [
        "5",
        "5 attn",
        "4",
        "4 attn",
        "3",
        "3 attn",
        "2",
        "2 attn",
        "1",
        "1 attn",
        "0",
        "0 attn",
    ]
    page.focus(".murano-layer-control .murano-slider")
    page.keyboard.press("ArrowLeft")
    bridge.sync()
    assert page.inner_text(".murano-layer-control .murano-value") == "L5 attn"
    assert widget.layer == 5
    assert "12 rows" in page.inner_text(".murano-dims")


def test_dark_theme_colours_the_bars_from_the_theme(page, widget, result):
    bridge = Bridge(page, widget, dark=True)
    bridge.sync()
    # A cell whose parts go both ways.
    labels = result.component_labels
    row, position = next(
        (row, j)
        for row in range(len(result.addresses))
        for j, seq in enumerate(result.positions(0).tolist())
        if len(
            {
                v > 0
                for _, v in expected_bars(result.contributions[row, 0, seq], 0.0, labels, False)[
                    :-1
                ]
            }
        )
        == 2
    )
    page.mouse.move(*bridge.cell_center(row, position))
    bridge.wait_frames()
    colours = page.evaluate(
        """() => [...document.querySelectorAll('.murano-why-fill')].map((f) =>
             [f.classList.contains('murano-why-neg') ? 'neg' : 'pos', getComputedStyle(f).backgroundColor])"""
    )
    assert {c for kind, c in colours if kind == "pos"} <= {"rgb(253, 141, 60)"}
    assert {c for kind, c in colours if kind == "neg"} <= {"rgb(107, 174, 214)"}
    assert {kind for kind, _ in colours} == {"pos", "neg"}
    background = page.evaluate(
        "() => getComputedStyle(document.querySelector('.murano-root')).backgroundColor"
    )
    assert background == "rgb(17, 20, 24)"
    bridge.screenshot("why-dark.png")


def test_the_export_shows_the_panel_and_the_component_view_with_no_kernel(
    offline_page, widget, result, tmp_path
):
    page = offline_page
    widget.selected = {"prompt": 0, "layer_index": 9, "position": 3}
    widget.explain = "target: London"
    path = widget.save_html(tmp_path / "why.html")
    page.goto(path.as_uri())
    page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")
    page.wait_for_selector(".murano-why-row")
    seq = result.positions(0).tolist()[3]
    parts = result.target_contributions[9, 0, seq, 0]
    bias = float(result.target_bias[9, 0, seq, 0])
    shown = panel(page)
    assert shown["where"] == "L4 · position 3"
    check_panel(
        shown,
        expected_bars(parts, bias, result.component_labels, False),
        float(np.nansum(parts.numpy()) + bias),
    )
    page.select_option(".murano-why-select", "top1")
    assert page.evaluate("() => window.muranoWidget.model.get('explain')") == "top1"
    page.select_option(".murano-view-select", "components")
    assert page.evaluate("() => window.muranoWidget.model.get('view')") == "components"
    assert page.is_visible(".murano-comp-canvas")
    page.focus(".murano-comp-canvas")
    page.keyboard.press("ArrowUp")
    assert "to the logit of" in page.inner_text(".murano-readout")
    assert page.refused == []
    assert not page.errors


# -- The panel and notebook 07's tables: one quantity, said alike (issue 36) ----------------------

NOTEBOOK_07 = Path(__file__).resolve().parents[2] / "notebooks" / "07_which_component.ipynb"


@pytest.fixture(scope="module")
def notebook_07():
    """Notebook 07's section 1, run as a kernel runs it: its namespace and its tables."""
    from notebook_cells import run_cells

    namespace, shown = run_cells(NOTEBOOK_07, through="versus = run_logit_lens")
    tables = [value for value in shown if isinstance(value, pd.DataFrame)]
    assert len(tables) == 2, "the answer's shares, then the answer's and the foil's"
    return namespace, tables


def bar_value(shown: dict, label: str) -> tuple[str, float]:
    (bar,) = [b for b in shown["bars"] if b[0] == label]
    return bar[1], bar[2]


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_panel_shows_what_notebook_07s_tables_show_and_says_so(
    page, browser, notebook_07, dark
):
    """The widget notebook 07 shows, at the cell its why panel explains with nothing hovered
    (the last row, the prompt's last position), has the numbers of the notebook's tables: the
    " Paris" logit's shares and, against the foil, those of " Paris" minus " Berlin"; both
    equal ReferenceAttribution's (plain transformers hooks). The panel's caption and the
    tables' column names say which quantity it is: the logit, the cell, the readout, the foil."""
    from chromium import new_page
    from reference import ReferenceAttribution

    from murano_widgets.demo_model import DEMO_MODEL_PATH

    namespace, (shares, both) = notebook_07
    prompt, widget, versus = namespace["prompt"], namespace["w"], namespace["versus"]
    reference = ReferenceAttribution(DEMO_MODEL_PATH)
    paris, berlin = (reference.token_id(prompt, word) for word in (" Paris", " Berlin"))
    plain = reference.attribute(prompt, paris)["parts"]
    foiled = reference.attribute(prompt, paris, foil=berlin)["parts"]

    # The notebook's tables: named for what they hold, and the reference's numbers.
    (column,) = shares.columns
    assert column == 'share of the " Paris" logit (last position, model\'s readout, no foil)'
    assert list(both.columns) == [
        'share of the " Paris" logit',
        'share of " Paris" minus " Berlin"',
    ]
    assert shares[column]["L0.mlp"] == round(plain["L0.mlp"], 2) == 4.83
    for label, value in plain.items():
        assert both.iloc[:, 0][label] == round(value, 2), label
        assert both.iloc[:, 1][label] == round(foiled[label], 2), label

    # The panel of the notebook's widget, nothing hovered or pinned.
    bridge = Bridge(page, widget, dark=dark)
    bridge.sync()
    page.mouse.move(1, 1)
    bridge.wait_frames()
    shown = panel(page)
    last = len(result_positions(widget)) - 1
    assert shown["title"] == "Why ␣Paris?"
    assert shown["where"] == f"L5 · position {last}"
    caption = page.inner_text(".murano-why-caption")
    assert caption == (
        "Each bar is one component's direct share of the logit of ␣Paris, this cell's top-1 "
        f"token, at layer 5's output, position {last} (input ␣is). Readout: the model's own, as "
        "every lens reads the last layer: the final norm (its scale held at this cell's value) "
        "and the unembedding. No foil: a raw logit, so a part that raises every token alike "
        "counts too."
    )
    text, value = bar_value(shown, "L0 MLP")
    assert value == pytest.approx(plain["L0.mlp"], abs=1e-4)
    assert text == logit_text(shares[column]["L0.mlp"]) == "+4.83"
    for label, name in (("L1 attn", "L1.attn"), ("embed", "embed")):
        if any(b[0] == label for b in shown["bars"]):
            assert bar_value(shown, label)[1] == pytest.approx(plain[name], abs=1e-4)
    bridge.screenshot(f"why-notebook-07-{'dark' if dark else 'light'}.png")

    # Against the foil: the notebook's second column, as the panel explains the answer.
    context, foil_page = new_page(browser)
    try:
        bridge = Bridge(foil_page, LogitLensWidget(versus, explain="answer"), dark=dark)
        bridge.sync()
        shown = panel(foil_page)
        assert shown["title"] == "Why the answer ␣Paris rather than ␣Berlin?"
        caption = foil_page.inner_text(".murano-why-caption")
        assert "the logit of the answer ␣Paris minus that of the foil ␣Berlin" in caption
        assert "at layer 5's output, position" in caption and "Readout: the model's own" in caption
        text, value = bar_value(shown, "L0 MLP")
        assert value == pytest.approx(foiled["L0.mlp"], abs=1e-4)
        assert text == logit_text(both.iloc[:, 1]["L0.mlp"]) == "+1.01"
        bridge.screenshot(f"why-notebook-07-foil-{'dark' if dark else 'light'}.png")
    finally:
        context.close()


def result_positions(widget) -> list[int]:
    return widget.result.positions(widget.prompt).tolist()
