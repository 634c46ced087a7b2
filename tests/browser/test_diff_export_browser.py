"""The lens diff's exported HTML page in headless Chromium: it draws with no kernel, offline.

The page is opened from a ``file://`` address with every other request refused and recorded, as
``test_export_html.py`` does for the heatmap. The numbers it should show come from the
comparison in Python (``describe_cell``, ``positions``, the lengths), not from the front end.
"""

from __future__ import annotations

import pytest
from diff_checks import check_tooltip
from harness import ARTIFACTS, fmt_prob

from murano_widgets import LogitLens, PromptBatch, load_demo_model, load_demo_tuned_lens
from murano_widgets.comparison.compare import compare, compare_lenses
from murano_widgets.widgets.diff import LensDiffWidget

pytestmark = pytest.mark.browser

# The demo tokenizer splits markup into single characters: "<", "b", ">", "&", ...
HOSTILE_PROMPT = "x</script><b>x</b> & y"
DEBUG = "document.getElementById('murano-root').__muranoDiffDebug"


@pytest.fixture(scope="module")
def comparisons():
    model = load_demo_model()
    tuned = compare_lenses(
        model, [HOSTILE_PROMPT, "The cat is"], lens_b=load_demo_tuned_lens(model)
    )
    step = LogitLens(model)
    a = step({"prompts": PromptBatch([HOSTILE_PROMPT])})["logit_lens"]
    b = step({"prompts": PromptBatch(["x</script><b>x</b> and z"])})["logit_lens"]
    return {
        "tuned": tuned,
        "prefix": compare(a, b, align="prefix"),
        "hostile_tokens": len(model.tokenizer.tokenize(HOSTILE_PROMPT)),
    }


def open_export(page, widget, path, dark: bool = False):
    # Wide enough for a whole prompt, so that every cell is on the canvas without scrolling.
    page.set_viewport_size({"width": 1700, "height": 700})
    page.emulate_media(color_scheme="dark" if dark else "light")
    widget.save_html(path)
    page.goto(path.as_uri())
    page.wait_for_selector(".murano-diff-canvas")
    page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def cell_pixels(page, i: int, j: int) -> dict:
    """The cell's corner pixel and the share of its pixels that are painted (alpha > 0)."""
    return page.evaluate(
        """([i, j]) => {
          const r = document.getElementById('murano-root').__muranoDiffDebug.cellClientRect(i, j);
          const c = document.querySelector('.murano-diff-canvas');
          const box = c.getBoundingClientRect();
          const k = c.width / box.width;
          const x = Math.floor((r.x - box.left) * k), y = Math.floor((r.y - box.top) * k);
          const w = Math.floor(r.w * k), h = Math.floor(r.h * k);
          const d = c.getContext('2d').getImageData(x, y, w, h).data;
          let painted = 0;
          for (let p = 3; p < d.length; p += 4) if (d[p] > 0) painted++;
          const corner = Array.from(c.getContext('2d').getImageData(x + 2, y + 2, 1, 1).data);
          return { corner, painted: painted / (w * h), inside: x + w <= c.width };
        }""",
        [i, j],
    )


def test_export_draws_every_cell_offline_and_data_stays_text(offline_page, comparisons, tmp_path):
    page = offline_page
    comparison = comparisons["tuned"]
    widget = LensDiffWidget(comparison)
    open_export(page, widget, tmp_path / "diff.html")
    rows, n = len(comparison.layers), comparison.a.lengths[0]
    assert n == comparisons["hostile_tokens"]  # the tokenizer's count, not the payload's
    aligned = comparison.aligned[:, 0, comparison.a.positions(0)]
    assert bool(aligned.all())  # two lenses on one model: every cell has a partner
    for i in range(rows):
        for j in range(n):
            cell = cell_pixels(page, i, j)
            assert cell["inside"] and cell["corner"][3] == 255, (i, j, cell)
            assert cell["painted"] > 0.95, (i, j, cell)
        # Nothing is drawn past the prompt's last token.
        after = cell_pixels(page, i, n)
        assert after["inside"] and after["painted"] == 0, (i, after)
    assert page.evaluate(f"() => {DEBUG}.state.metric") == "delta_prob"
    assert page.title() == "Lens difference — toy-world (logit lens) vs toy-world (tuned lens)"
    # The prompt's markup is text: shown as typed, never parsed.
    lines = page.locator(".murano-diff-prompt-line").all_text_contents()
    assert lines[0] == f"a: {HOSTILE_PROMPT}"
    assert page.evaluate("() => document.querySelectorAll('#murano-root b, img').length") == 0
    assert page.evaluate("() => window.__pwned") is None
    # The metric menu works with no kernel.
    page.select_option(".murano-diff-metric-select", "kl")
    assert page.evaluate("() => window.muranoWidget.model.get('metric')") == "kl"
    page.select_option(".murano-diff-metric-select", "delta_prob")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lens_diff_export_light.png"), full_page=True)
    assert page.refused == []
    assert page.errors == []


def test_hovered_cell_shows_both_lenses_values(offline_page, comparisons, tmp_path):
    page = offline_page
    comparison = comparisons["tuned"]
    open_export(page, LensDiffWidget(comparison), tmp_path / "diff.html")
    row, position = 2, 3
    r = page.evaluate(f"([i, j]) => {DEBUG}.cellClientRect(i, j)", [row, position])
    page.mouse.move(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    page.wait_for_selector(".murano-diff-tooltip:not([hidden])")
    cell = comparison.describe_cell(0, row, position)
    tooltip = check_tooltip(page, cell)
    # The chosen token's two probabilities (Python's numbers) are in the tooltip.
    assert f"({fmt_prob(cell['token_prob_a'])} → {fmt_prob(cell['token_prob_b'])})" in tooltip
    page.locator(".murano-diff").screenshot(path=str(ARTIFACTS / "lens_diff_export_tooltip.png"))
    assert page.refused == []
    assert page.errors == []


def test_cells_without_a_partner_are_hatched(offline_page, comparisons, tmp_path):
    page = offline_page
    comparison = comparisons["prefix"]
    widget = LensDiffWidget(comparison, metric="top1_differs")
    open_export(page, widget, tmp_path / "prefix.html", dark=True)
    partners = comparison.positions[0, comparison.a.positions(0)].tolist()
    assert any(p < 0 for p in partners) and any(p >= 0 for p in partners)
    for i in range(len(comparison.layers)):
        for j, partner in enumerate(partners):
            colour = page.evaluate(f"([i, j]) => {DEBUG}.cellColour(i, j)", [i, j])
            cell = cell_pixels(page, i, j)
            if partner < 0:
                # Diagonal stripes: part of the cell painted, the rest the page showing through.
                assert colour is None, (i, j)
                assert 0.1 < cell["painted"] < 0.7, (i, j, cell)
            else:
                assert colour is not None and cell["painted"] > 0.95, (i, j, cell)
    assert "shared token prefix" in page.locator(".murano-diff-note").text_content()
    legend = page.locator(".murano-diff-legend-missing")
    assert legend.is_visible() and legend.text_content() == "missing"
    page.screenshot(path=str(ARTIFACTS / "lens_diff_export_dark_prefix.png"), full_page=True)
    assert page.refused == []
    assert page.errors == []


def test_export_starts_in_the_widgets_state_in_dark_mode(offline_page, comparisons, tmp_path):
    page = offline_page
    comparison = comparisons["tuned"]
    widget = LensDiffWidget(comparison, prompt=1, metric="kl")
    widget.selected = {"prompt": 1, "layer_index": 1, "position": 2}
    open_export(page, widget, tmp_path / "diff.html", dark=True)
    state = page.evaluate(f"() => {DEBUG}.state")
    assert state["prompt"] == 1 and state["metric"] == "kl"
    assert state["selected"] == {"prompt": 1, "layer_index": 1, "position": 2}
    assert page.input_value(".murano-diff-metric-select") == "kl"
    assert page.text_content(".murano-diff-prompt-text") == "1 (0–1)"
    assert page.locator(".murano-diff-prompt-line").first.text_content() == "a: The cat is"
    # Dark: the page and the widget follow the system setting.
    background = page.evaluate(
        "() => getComputedStyle(document.querySelector('.murano-diff')).backgroundColor"
    )
    assert background == "rgb(17, 20, 24)"
    page.screenshot(path=str(ARTIFACTS / "lens_diff_export_dark.png"), full_page=True)
    # Pinning works in the page: Escape unpins (the page has no kernel to tell).
    page.focus(".murano-diff-canvas")
    page.keyboard.press("Escape")
    assert page.evaluate("() => window.muranoWidget.model.get('selected')") is None
    assert page.refused == []
    assert page.errors == []
