"""The data-set widget's token-group view (issue 49) in headless Chromium: the "Token groups"
entry of its menu draws every group's mean probability per layer with its interval (Wendler's
figure, as ``plot_groups`` draws it), the legend names the groups, and hovering a layer reads
each group's value. The page and the kernel's round trip are test_dataset_browser.py's."""

from __future__ import annotations

import numpy as np
import pytest
from harness import ARTIFACTS
from test_dataset_browser import ChartBridge

from murano_widgets import lens_dataset

pytestmark = pytest.mark.browser

PROMPTS = [
    "The capital of France is",
    "Monday Tuesday",
    "one two three four five six seven",
    "The Eiffel Tower is in the city of",
    "Alice met Bob. Alice gave",
    "one two",
]
ANSWERS = [" Paris", " Wednesday", " eight", " Paris", " Bob", " three"]
GROUPS = {"answer": [a.strip() for a in ANSWERS], "the": " the", "one": "one"}


@pytest.fixture(scope="module")
def grouped(load_tiny):
    return lens_dataset(load_tiny("gpt2"), PROMPTS, ANSWERS, groups=GROUPS, progress=False)


def test_the_groups_view_draws_each_group_with_its_interval(page, grouped):
    view = grouped.show()
    bridge = ChartBridge(page, view)
    menu = page.locator(".murano-ds-header select, select[aria-label='what the chart shows']")
    options = menu.first.locator("option").all_inner_texts()
    assert "Token groups (mean probability, Wendler's figure)" in options
    assert "Probability of the group “the” (mean)" in options
    menu.first.select_option("groups")
    bridge.sync()
    assert view.chart.metric == "groups"
    lines = page.locator(".murano-ds-line")
    assert [lines.nth(k).get_attribute("data-group") for k in range(lines.count())] == list(GROUPS)
    assert page.locator(".murano-ds-legend-item").all_inner_texts() == list(GROUPS)
    # Each group's dots sit at its mean, in the chart's geometry (640 x 260 units, a fraction
    # from y = 226 at 0 to y = 12 at 1: chart.js), against the summary's numbers.
    summary = grouped.summary()
    for k, name in enumerate(GROUPS):
        dots = page.locator(f".murano-ds-series[data-series='{k}'] .murano-ds-dot")
        ys = [float(dots.nth(j).get_attribute("cy")) for j in range(dots.count())]
        means = summary[f"group_{name}_mean"].to_numpy()
        np.testing.assert_allclose(ys, 226 - means * 214, atol=0.01)
        band = page.locator(f".murano-ds-series[data-series='{k}'] .murano-ds-band")
        assert band.get_attribute("d").startswith("M")
    page.mouse.move(*bridge.column_point(1))
    text = page.inner_text(".murano-ds-readout")
    row = summary[summary["layer"] == grouped.layers[1]]
    for name in GROUPS:
        expected = page.evaluate(
            "(v) => window.ds.formatInterval(...v)",
            [float(row[f"group_{name}_{c}"].iloc[0]) for c in ("mean", "ci_low", "ci_high")],
        )
        assert f"group {name}" in text and expected in text, (name, expected, text)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-ds-root").screenshot(path=str(ARTIFACTS / "dataset_groups_widget.png"))
    # Back to a series metric: one curve per answer set again, the legend with it.
    menu.first.select_option("answer_prob")
    bridge.sync()
    assert page.locator(".murano-ds-line").count() == 1
    assert page.locator(".murano-ds-legend-item").all_inner_texts() == ["answer (n=6)"]
    assert not page.errors, page.errors
