""" "Describe this cell" in headless Chromium: the live widget's real bundle over a Patchscope's
result, with the fake kernel of ``test_live_browser.py`` in the page. Pinning a cell offers the
button (only for a Patchscope shown); pressing it sends the ``describe_patchscope`` request for that
cell; the reply's text (what ``PatchscopeLens.describe`` gives there, computed here) shows as
text in the pinned cell's panel, and goes when another cell is pinned."""

from __future__ import annotations

import pytest
from harness import ARTIFACTS
from test_live_browser import FRANCE, live_state, mount, reply, requests, status, wait_for_kernel

from murano_widgets import PatchscopeLens, load_demo_model, run_logit_lens
from murano_widgets.live.describe import DESCRIBE_TOKENS

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def demo():
    model = load_demo_model()
    lens = PatchscopeLens()
    return model, lens, run_logit_lens(model, [FRANCE], lens=lens)


def pin(page, layer_index: int, position: int) -> None:
    r = page.evaluate(f"() => window.debug.cellClientRect({layer_index}, {position})")
    page.mouse.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)


def test_describe_a_pinned_cell_of_a_patchscope(page, demo):
    model, lens, result = demo
    mount(page, live_state(result))
    wait_for_kernel(page)
    assert page.is_hidden(".murano-describe"), "nothing pinned"
    pin(page, 2, 3)
    assert page.is_visible(".murano-describe")
    assert page.inner_text(".murano-describe-where") == "L2 · pos 3"
    page.click(".murano-describe-run")
    sent = requests(page)[-1]
    assert sent == {
        "action": "describe_patchscope",
        "prompt": 0,
        "layer": 2,
        "position": 3,
        "id": sent["id"],
    }
    assert status(page)["text"] == "Describing prompt 0: block 2's output at position 3…"
    text = lens.describe(model, FRANCE, layer=2, position=3, max_new_tokens=DESCRIBE_TOKENS)
    reply(page, "done", sent["id"], text)
    shown = page.eval_on_selector(".murano-describe-text", "(e) => e.textContent")
    assert shown == text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "live-describe.png"))
    # The model's words are data: markup in them is shown as it is written.
    page.click(".murano-describe-run")
    again = requests(page)[-1]
    reply(page, "done", again["id"], "<b>bold</b> & co")
    assert page.eval_on_selector(".murano-describe-text", "(e) => e.textContent") == (
        "<b>bold</b> & co"
    )
    assert page.eval_on_selector(".murano-describe-text", "(e) => e.children.length") == 0
    # Another cell pinned: the text was about the first one.
    pin(page, 1, 2)
    assert page.inner_text(".murano-describe-where") == "L1 · pos 2"
    assert page.eval_on_selector(".murano-describe-text", "(e) => e.textContent") == ""
    assert not page.errors


def test_not_offered_for_another_lens(page, demo):
    model, _, _ = demo
    mount(page, live_state(run_logit_lens(model, [FRANCE])))
    wait_for_kernel(page)
    pin(page, 2, 3)
    assert page.is_visible(".murano-patch-control")
    assert page.is_hidden(".murano-describe")
