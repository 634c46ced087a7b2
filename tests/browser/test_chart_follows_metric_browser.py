"""The heatmap's readings that had no words for what they showed (issue 35): the trajectory chart
follows the colouring (KL is drawn as KL, on the colour bar's scale), a new payload that refits
the colour scale says so in the legend, and every slider has an accessible name of its own.

Fast: the real bundle in a test page with a fake model (``harness.py``), the demo model's
results computed here.
"""

from __future__ import annotations

import pytest
from harness import Bridge, widget_state

from murano_widgets import LogitLensWidget, load_demo_model
from murano_widgets.run import run_logit_lens

pytestmark = pytest.mark.browser

FRANCE = "The capital of France is"
JAPAN = "The capital of Japan is"  # beside France, KL's colour domain doubles (10 -> 20 bits)


@pytest.fixture(scope="module")
def results():
    model = load_demo_model()
    return {"one": run_logit_lens(model, [FRANCE]), "two": run_logit_lens(model, [FRANCE, JAPAN])}


def chart(bridge) -> dict:
    return bridge.debug("trajectory")


def python_sets_metric(bridge, metric: str) -> None:
    """Python sets ``metric`` (which sends the detail sections too), the kernel syncs both."""
    bridge.widget.metric = metric
    bridge.kernel_set("_sections")
    bridge.kernel_set("metric")
    bridge.wait_frames()


def test_the_chart_follows_the_metric(page, results):
    result = results["one"]
    widget = LogitLensWidget(result)
    bridge = Bridge(page, widget)
    assert chart(bridge)["mode"] == "prob"

    python_sets_metric(bridge, "kl")
    drawn = chart(bridge)
    assert drawn["mode"] == "metric"
    [line] = drawn["series"]
    assert line["key"] == "metric:kl"
    # The chart's column is the prompt's last position: its KL at every row, as the cells show it.
    last = result.lengths[0] - 1
    step = widget._meta["sections"]["kl_to_final"]["scale"]
    expected = result.kl_to_final[:, 0, result.positions(0)[last]].tolist()
    assert line["values"] == pytest.approx(expected, abs=step)
    assert (
        page.locator(".murano-traj-mode-button[data-mode='metric']").get_attribute("aria-pressed")
        == "true"
    )
    assert "KL" in page.locator(".murano-traj-mode-button[data-mode='metric']").inner_text()
    assert "KL" in page.locator(".murano-traj-axis-title").text_content()

    # The user's own choice holds; the next change of metric sets the mode again.
    page.locator(".murano-traj-mode-button[data-mode='prob']").click()
    assert chart(bridge)["mode"] == "prob"
    python_sets_metric(bridge, "final_rank")
    assert chart(bridge)["mode"] == "rank"
    assert page.locator(".murano-traj-mode-button[data-mode='metric']").is_hidden()


def test_a_new_payload_that_rescales_the_colours_says_so(page, results):
    widget = LogitLensWidget(results["one"])
    widget.metric = "kl"
    widget._details = True
    bridge = Bridge(page, widget)
    note = page.locator(".murano-legend-change")
    assert note.is_hidden()
    domains = [
        next(m["domain"] for m in LogitLensWidget(results[k])._meta["metrics"] if m["name"] == "kl")
        for k in ("one", "two")
    ]
    assert domains == [[0.0, 10.0], [0.0, 20.0]]  # the case this test is about

    # Python replaces the payload (a prompt added), as the live widget does.
    bigger = LogitLensWidget(results["two"])
    bigger._details = True
    for name, value in widget_state(bigger, ("_meta", "_sections")).items():
        page.evaluate("([n, v]) => window.model.kernelSet(n, v)", [name, value])
    bridge.wait_frames()
    assert note.is_visible()
    assert note.inner_text() == "Colour scale changed: now 0–20.0 bits (was 0–10.0 bits)"
    assert note.get_attribute("role") == "status"

    # Another metric: the line was about KL's scale, and goes.
    page.select_option(".murano-select", "prob")
    bridge.wait_frames()
    assert note.is_hidden()


@pytest.mark.parametrize("n_prompts", ["one", "two"])
def test_every_slider_has_an_accessible_name(page, results, n_prompts):
    Bridge(page, LogitLensWidget(results[n_prompts]))
    names = page.eval_on_selector_all(
        ".murano-root input[type=range]", "(els) => els.map((e) => e.getAttribute('aria-label'))"
    )
    assert names == ["Prompt shown", "Layer highlighted"], names
