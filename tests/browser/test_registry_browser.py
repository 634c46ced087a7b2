"""The front end takes everything about metrics and layers from Python (payload version 2).

The metric menu, labels, colour domains and which metrics can be shown come from
``meta["metrics"]``; the ``layer`` trait is a model layer; missing values (a non-finite cell, or
a position whose final distribution was not finite) are drawn as missing, never as a colour.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from harness import Bridge
from lens_data import make_result
from matplotlib import colormaps

from murano_widgets import LogitLensWidget

pytestmark = pytest.mark.browser

EIFFEL = ["The", " Eiff", "el", " Tower", " is", " in", " the", " city", " of"]
COUNT = [" one", " two", " three", " four"]
LAYER = ".murano-layer-control .murano-slider"


def test_the_layer_trait_is_a_model_layer(page):
    widget = LogitLensWidget(make_result(prompts=[EIFFEL, COUNT], layers=[0, 3, 5, 7]))
    assert widget.layer == 7, "the highest model layer first"
    bridge = Bridge(page, widget)
    state = bridge.state()
    assert (state["layer"], state["modelLayer"]) == (3, 7), "model layer 7 is row 3"
    assert page.inner_text(".murano-layer-control .murano-value") == "L7"
    page.focus(LAYER)
    page.keyboard.press("ArrowLeft")
    bridge.sync()
    assert widget.layer == 5, "the slider sends the row's model layer"
    assert page.get_attribute(LAYER, "aria-valuetext") == "layer 5, row 2 (0 to 3)"
    widget.layer = 3
    bridge.kernel_set("layer")
    bridge.wait_frames()
    assert bridge.state()["layer"] == 1
    assert page.inner_text(".murano-layer-control .murano-value") == "L3"
    # The row labels are model layers; a click sends the row, Python adds the model layer.
    page.mouse.click(*bridge.cell_center(2, 1))
    sent = bridge.sync()
    assert {"selected": {"prompt": 0, "layer_index": 2, "position": 1}} in sent
    assert widget.selected["layer"] == 5 and widget.selected["layer_index"] == 2
    assert "L5 · pos 1" in page.inner_text(".murano-pin")
    assert not page.errors


def test_the_menu_lists_every_metric_and_disables_what_the_result_lacks(page):
    full = make_result(prompts=[EIFFEL], n_layers=6)
    lacking = dataclasses.replace(
        full, final_token_probs=None, final_token_ranks=None, kl_to_final=None, final_tokens=None
    )
    widget = LogitLensWidget(lacking)
    metrics = {m["name"]: m for m in widget._meta["metrics"]}
    assert not metrics["kl"]["available"] and metrics["kl"]["unavailable_reason"]
    bridge = Bridge(page, widget)
    options = page.eval_on_selector_all(
        ".murano-select option",
        "els => els.map((e) => ({value: e.value, text: e.textContent, disabled: e.disabled, title: e.title}))",
    )
    assert [o["value"] for o in options] == [m["name"] for m in widget._meta["metrics"]]
    for option in options:
        spec = metrics[option["value"]]
        assert option["disabled"] == (not spec["available"]), option
        if spec["available"]:
            assert option["text"] == spec["label"]
            assert option["title"] == spec["description"]
        else:
            reason = spec["unavailable_reason"]
            # The reason is visible in the menu (its first clause) and whole in the option's title.
            first = re.split(r"[:,;]", reason)[0].strip()
            assert option["text"] == f"{re.sub(r' [(][^()]*[)]$', '', spec['label'])} ({first})"
            assert reason in option["title"]
    # Without the model's final prediction: no settled dots, no "final prediction" in the tooltip.
    assert page.is_hidden(".murano-key-settled")
    page.mouse.move(*bridge.cell_center(5, 2))
    bridge.sync()
    tip = page.inner_text(".murano-tooltip")
    assert "final prediction" not in tip and "Layer 5 · position 2" in tip
    assert not page.errors


def test_a_position_with_a_non_finite_final_distribution_is_missing_for_final_metrics(page):
    result = make_result(prompts=[EIFFEL], n_layers=6)
    seq = result.positions(0).tolist()[4]
    result.final_tokens[0, seq] = -1
    for name in ("final_token_probs", "kl_to_final"):
        getattr(result, name)[:, 0, seq] = float("nan")
    result.final_token_ranks[:, 0, seq] = -1
    widget = LogitLensWidget(result)
    assert "final_missing" in widget._meta["sections"]
    bridge = Bridge(page, widget)
    # Under a metric that does not need the final distribution the column has its colours ...
    assert all(page.evaluate(f"() => window.debug.cellColour({i}, 4)")[3] == 255 for i in range(6))
    page.select_option(".murano-select", "final_rank")
    bridge.sync()
    assert bridge.state()["shownMetric"] == "final_rank"
    # ... under one that does, every row of that column is missing (hatched), the others not.
    for i in range(6):
        assert page.evaluate(f"() => window.debug.cellColour({i}, 4)")[3] == 0, i
        assert page.evaluate(f"() => window.debug.cellColour({i}, 3)")[3] == 255, i
    viridis = np.array([np.array(colormaps["viridis"](k / 255)[:3]) * 255 for k in range(256)])
    r = page.evaluate("() => window.debug.cellClientRect(2, 4)")
    for dx in range(4, 16, 4):
        px = np.array(bridge.pixel(r["x"] + dx, r["y"] + r["h"] / 2))
        assert np.abs(viridis - px[:3]).max(axis=1).min() > 10, px
    assert page.is_visible(".murano-key-missing")
    page.mouse.move(*bridge.cell_center(2, 4))
    bridge.wait_frames()
    tip = page.inner_text(".murano-tooltip")
    assert "final prediction" in tip and "no value (non-finite)" in tip
    assert "rank 0" not in tip, "no confident rank against a final distribution that is not there"
    assert not page.errors


def test_the_header_says_which_lens(page):
    result = dataclasses.replace(make_result(prompts=[EIFFEL], n_layers=4), lens_kind="tuned")
    bridge = Bridge(page, LogitLensWidget(result))
    assert page.inner_text(".murano-title") == "Tuned lens"
    assert "Tuned lens" in page.get_attribute(".murano-root", "aria-label")
    assert page.get_attribute(".murano-canvas", "aria-label").startswith(
        "Tuned lens heatmap: 4 layers"
    )
    assert bridge.state()["layer"] == 3


def _titled_widget():
    """A result of a lens kind whose title is not "<Kind> lens": it must show as written."""
    result = dataclasses.replace(
        make_result(prompts=[EIFFEL], n_layers=4), lens_kind="jac", lens_title="Jacobian lens ✓"
    )
    return LogitLensWidget(result)


def test_a_lens_of_the_users_shows_its_own_title(page):
    """The title comes from the result (Python's Lens.title), not from a name the front end
    makes of the kind."""
    Bridge(page, _titled_widget())
    assert page.inner_text(".murano-title") == "Jacobian lens ✓"
    assert page.get_attribute(".murano-canvas", "aria-label").startswith("Jacobian lens ✓ heatmap")
    assert not page.errors


def test_a_lens_of_the_users_shows_its_own_title_exported(offline_page, tmp_path):
    page = offline_page
    path = _titled_widget().save_html(tmp_path / "lens.html")
    page.goto(path.as_uri())
    page.wait_for_selector(".murano-canvas")
    assert page.inner_text(".murano-title") == "Jacobian lens ✓"
    assert page.title().startswith("Jacobian lens ✓")
    assert not page.refused


def test_the_legend_uses_the_domain_python_sent(page):
    widget = LogitLensWidget(make_result(prompts=[EIFFEL], n_layers=6))
    bridge = Bridge(page, widget)
    page.select_option(".murano-select", "kl")
    bridge.sync()
    spec = next(m for m in widget._meta["metrics"] if m["name"] == "kl")
    ticks = page.eval_on_selector_all(".murano-legend-tick", "els => els.map(e => e.textContent)")
    assert ticks[0] == "0"
    top = spec["domain"][1]
    assert math.isclose(float(ticks[-1]), top, rel_tol=0.05) or float(ticks[-1]) <= top
    assert page.inner_text(".murano-legend-title") == spec["label"]
    assert page.get_attribute(".murano-select", "title") == spec["description"]
