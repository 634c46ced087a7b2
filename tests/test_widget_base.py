"""One widget base: every widget is a MuranoWidget and exports through the same page."""

from __future__ import annotations

import json
import re

import pytest
from test_logit_lens import run_lens

from murano_widgets import LogitLensWidget, compare, lens_dataset, show_lens_diff
from murano_widgets.widgets.base import MuranoWidget
from murano_widgets.widgets.dataset import DatasetChart
from murano_widgets.widgets.diff import LensDiffWidget


@pytest.fixture(scope="module")
def widgets(load_tiny):
    model = load_tiny("gpt2")
    a = run_lens(model)
    lens = LogitLensWidget(a)
    diff = show_lens_diff(compare(a, run_lens(model, layers=[0, 2])))
    data = lens_dataset(model, ["one two", "Alice met"], [" three", " Bob"], progress=False)
    return {"lens": lens, "diff": diff, "chart": data.show().chart}


def _state(page: str) -> dict:
    block = re.search(
        r'<script type="application/json" id="murano-state">(.*?)</script>', page, re.S
    )
    assert block, "the page carries its state in one JSON block"
    return json.loads(block.group(1))["state"]


@pytest.mark.parametrize("name", ["lens", "diff", "chart"])
def test_every_widget_is_one_kind_and_exports_the_same_way(widgets, name, tmp_path):
    widget = widgets[name]
    assert isinstance(widget, MuranoWidget)
    assert type(widget).to_html is MuranoWidget.to_html
    assert type(widget).save_html is MuranoWidget.save_html
    page = widget.to_html(title="A <title> & more")
    assert "<title>A &lt;title&gt; &amp; more</title>" in page
    assert widget.save_html(tmp_path / "w.html").read_text(encoding="utf-8") == widget.to_html()
    state = _state(page)
    assert state["_meta"] == json.loads(json.dumps(widget._meta))
    with pytest.raises(TypeError, match="title"):
        widget.to_html(title=3)


def test_the_exported_state_follows_the_view(widgets):
    lens = widgets["lens"]
    lens.prompt, lens.metric = 1, "entropy"
    lens.selected = {"prompt": 1, "layer_index": 0, "position": 0}
    state = _state(lens.to_html())
    assert (state["prompt"], state["metric"]) == (1, "entropy")
    assert state["selected"] == {"prompt": 1, "layer_index": 0, "position": 0}
    chart = widgets["chart"]
    chart.order = "worst"
    assert _state(chart.to_html())["order"] == "worst"
    assert isinstance(widgets["diff"], LensDiffWidget) and isinstance(chart, DatasetChart)
