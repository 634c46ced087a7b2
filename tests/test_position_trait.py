"""The heatmap's ``position`` trait (issue 51): the first position the grid shows, synced, checked
against the result's longest prompt, and kept by an exported page. Its round trip with the
front end is tests/browser/test_long_trace_browser.py's."""

from __future__ import annotations

import pytest
from traitlets import TraitError

from murano_widgets import LogitLens, LogitLensWidget, PromptBatch

PROMPTS = ["The Eiffel Tower is in the city of Paris", "one two"]


@pytest.fixture(scope="module")
def lens(load_tiny):
    model = load_tiny("llama")
    return LogitLens(model, top_k=3)({"prompts": PromptBatch(PROMPTS)})["logit_lens"]


def test_position_is_synced_checked_and_exported(lens):
    widget = LogitLensWidget(lens)
    longest = int(lens.attention_mask.sum(dim=1).max())
    assert widget.trait_metadata("position", "sync") is True
    assert widget.position == 0 and widget.get_state()["position"] == 0
    widget.set_state({"position": longest - 1})
    assert widget.position == longest - 1
    for bad, shown in ((longest, str(longest)), (-1, "-1"), (True, "bool"), (2.5, "float")):
        with pytest.raises(TraitError, match=rf"position.*{shown}"):
            widget.position = bad
    assert widget.position == longest - 1
    import json
    import re

    page = widget.to_html()
    state = json.loads(
        re.search(r'id="murano-state">(.*?)</script>', page, re.DOTALL).group(1)  # type: ignore[union-attr]
    )["state"]
    assert state["position"] == longest - 1
