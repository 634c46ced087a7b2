"""The data-set widget of several lenses side by side in headless Chromium: a curve per lens and
answer set (a lens's colour, a set's dash), the readout per series, the lens menu of the prompt
list (ordered by that lens's ranks), opening a prompt's heatmap of every lens, and the commitment
chart."""

from __future__ import annotations

import pytest
from harness import ARTIFACTS
from test_dataset_browser import ChartBridge

from murano_widgets import lens_dataset, load_demo_model, load_demo_tuned_lens
from murano_widgets.demo_model.corpus import COUNTRIES

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def data():
    model = load_demo_model()
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(model)}
    countries = COUNTRIES[:10]
    prompts = [f"The capital of {c} is" for c, _, _ in countries]
    answers = [f" {capital}" for _, capital, _ in countries]
    return lens_dataset(model, prompts, answers, lens=lenses, progress=False)


def test_a_curve_per_lens_the_lens_menu_and_a_heatmap_of_every_lens(page, data):
    view = data.show()
    bridge = ChartBridge(page, view)
    lines = page.eval_on_selector_all(
        ".murano-ds-line",
        "els => els.map(e => [e.dataset.lens, e.getAttribute('stroke-dasharray')])",
    )
    assert [lens for lens, _ in lines] == ["logit", "tuned"]
    colours = page.eval_on_selector_all(
        ".murano-ds-series", "els => els.map(e => getComputedStyle(e).color)"
    )
    assert colours[0] != colours[1], "each lens its colour"
    legend = page.inner_text(".murano-ds-legend")
    assert "answer · Logit lens (n=10)" in legend and "answer · Tuned lens (n=10)" in legend
    # The readout: a row per lens.
    page.mouse.move(*bridge.column_point(2))
    readout = page.inner_text(".murano-ds-readout")
    assert "answer · Logit lens" in readout and "answer · Tuned lens" in readout
    assert "committed from here on" in readout
    # Choose a layer: the prompts listed by the logit lens's ranks; then by the tuned lens's.
    page.mouse.click(*bridge.column_point(2))
    bridge.sync()
    assert page.is_visible(".murano-ds-lens")
    first_logit = page.get_attribute(".murano-ds-prompt", "data-prompt")
    title = page.inner_text(".murano-ds-prompts-title")
    assert title.endswith("under the Logit lens")
    page.select_option(".murano-ds-lens", "tuned")
    assert {"lens_name": "tuned"} in bridge.sync()
    assert view.chart.lens_name == "tuned"
    assert page.inner_text(".murano-ds-prompts-title").endswith("under the Tuned lens")
    ranks = data.lens("tuned").answer_ranks["answer"][2]
    shown = page.eval_on_selector_all(
        ".murano-ds-prompt", "els => els.map(e => Number(e.dataset.prompt))"
    )
    assert [ranks[p] for p in shown] == sorted(ranks[p] for p in shown)
    assert first_logit is not None
    # Open a prompt: its heatmap holds both lenses and shows the tuned one first.
    page.click(f'.murano-ds-prompt[data-prompt="{shown[0]}"]')
    bridge.sync()
    assert view.opened == (shown[0], "answer")
    assert view.heatmap.lens_names == ["logit", "tuned"] and view.heatmap.lens_name == "tuned"
    # The commitment chart: the share committed by each layer, a curve per lens.
    page.select_option(".murano-ds-select", "committed")
    bridge.sync()
    assert view.chart.metric == "committed"
    assert page.locator(".murano-ds-line").count() == 2
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-ds-root").screenshot(path=str(ARTIFACTS / "dataset_lenses.png"))
    assert not page.errors, page.errors
