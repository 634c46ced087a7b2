"""Issue 21, item 5: a heatmap opens where the prediction is, at the prompt's last position.

A long prompt is wider than the widget, and the column the trajectory chart follows (the last
position) used to be off to the right, the view scrolled to the start. Now the heatmap and the
diff open with the prompt's last position in view; a change of prompt shows the new prompt's
end; a pinned cell of the prompt is shown instead. Failed before the fix: the last column's box
lay beyond the scroller's right edge.
"""

from __future__ import annotations

import pytest
from harness import Bridge
from lens_data import PLAIN_TOKENS, make_result
from test_diff_browser import mount as mount_diff

from murano_widgets import (
    LensDiffWidget,
    LogitLensWidget,
    compare_lenses,
    load_demo_model,
    load_demo_tuned_lens,
)

pytestmark = pytest.mark.browser

LONG = [PLAIN_TOKENS[k % len(PLAIN_TOKENS)] for k in range(60)]
SHORT = PLAIN_TOKENS[:5]
OTHER = [PLAIN_TOKENS[(3 * k) % len(PLAIN_TOKENS)] for k in range(45)]

IN_VIEW = """([scroller, layer, position]) => {
  const c = window.debug.cellClientRect(layer, position);
  const s = document.querySelector(scroller).getBoundingClientRect();
  return c !== null && c.x >= s.left - 0.5 && c.x + c.w <= s.right + 0.5;
}"""


def in_view(page, position: int, *, layer: int = 0, diff: bool = False) -> bool:
    scroller = ".murano-diff-scroller" if diff else ".murano-scroll"
    return page.evaluate(IN_VIEW, [scroller, layer, position])


def test_the_heatmap_opens_at_the_prompts_end_and_follows_the_prompt(page):
    widget = LogitLensWidget(make_result(prompts=[LONG, SHORT, OTHER], n_layers=6))
    bridge = Bridge(page, widget)
    assert bridge.layout()["maxScroll"] > 0, "the prompt is wider than the widget"
    assert in_view(page, len(LONG) - 1), "the last position is in view when the widget opens"
    assert not in_view(page, 0), "(so the first is not: the view is scrolled)"
    widget.prompt = 2
    bridge.kernel_set("prompt")
    bridge.wait_frames()
    assert in_view(page, len(OTHER) - 1), "a new prompt opens at its own end"
    # A pinned cell of the prompt is what it opens on.
    widget.prompt = 0
    widget.selected = {"prompt": 0, "layer_index": 2, "position": 3}
    bridge.kernel_set("selected")
    bridge.kernel_set("prompt")
    bridge.wait_frames()
    assert in_view(page, 3, layer=2), "the pinned cell is in view"


@pytest.fixture(scope="module")
def long_comparison():
    model = load_demo_model()
    prompt = "The Eiffel Tower is in the city of Paris, and the capital of Italy is"
    return compare_lenses(model, [prompt, "Monday, Tuesday,"], lens_b=load_demo_tuned_lens(model))


def test_the_diff_opens_at_the_prompts_end(page, long_comparison):
    widget = LensDiffWidget(long_comparison)
    mount_diff(page, widget)
    n = int(long_comparison.a.attention_mask[0].sum())
    assert in_view(page, n - 1, diff=True), f"the last of {n} positions is in view"
    assert not in_view(page, 0, diff=True), "(so the first is not: the view is scrolled)"
