"""The heatmap coloured by a tracked token's probability (the metric ``"target"``): the colours,
the tooltip, the readout and the legend are Python's values of the token the widget's ``target``
names; the token menu beside the colour menu switches tokens (pointer and keyboard), syncs the
trait, and follows it when Python changes it."""

from __future__ import annotations

import pytest
from harness import Bridge, fmt_prob

from murano_widgets import LogitLensWidget, load_demo_model
from murano_widgets.run import run_logit_lens
from murano_widgets.tokens import display_token

pytestmark = pytest.mark.browser

PROMPTS = ["The capital of France is", "The capital of Italy is"]
# Seven: the chart draws the first six targets' lines unless asked; the seventh's is switched on
# when the heatmap shows it.
TARGETS = [" Rome", " Paris", " is", " of", " capital", " France", " Italy"]


@pytest.fixture(scope="module")
def tracked():
    return run_logit_lens(load_demo_model(), PROMPTS, targets=TARGETS)


def stored(p: float) -> float:
    """A probability as the payload stores it (to 1/65535; a non-zero one never as 0)."""
    raw = round(p * 65535)
    return (raw if raw or p == 0 else 1) / 65535


def expected_colours(page, result, prompt: int, t: int) -> list[list[list[int]]]:
    """Each cell's colour (row, position) of prompt ``prompt`` for target ``t``: Python's value,
    quantised as the payload stores it, on viridis (the registry's scale) at 1/255 steps."""
    seqs = result.positions(prompt).tolist()
    ks = [
        [round(stored(float(result.target_probs[row, prompt, s, t])) * 255) for s in seqs]
        for row in range(len(result.layers))
    ]
    return page.evaluate(
        "(ks) => ks.map((row) => row.map((k) => [...window.lens.scaleColour('viridis', k / 255), 255]))",
        ks,
    )


def drawn_colours(bridge, result, prompt: int) -> list[list[list[int]]]:
    n = result.lengths[prompt]
    return bridge.page.evaluate(
        "([L, n]) => Array.from({length: L}, (_, i) => Array.from({length: n}, (_, j) => window.debug.cellColour(i, j)))",
        [len(result.layers), n],
    )


def menu(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        ".murano-target-select option", "(os) => os.map((o) => [o.value, o.textContent])"
    )


def test_the_heatmap_shows_the_chosen_tokens_probability_and_the_menu_switches_it(page, tracked):
    widget = LogitLensWidget(tracked, metric="target", target=" Paris")
    bridge = Bridge(page, widget)
    state = bridge.state()
    assert (state["metric"], state["shownMetric"], state["target"]) == (
        "target",
        "target",
        " Paris",
    )
    # The token menu: every tracked token, shown as the package shows tokens, the chosen one set.
    assert page.is_visible(".murano-target-select")
    assert page.get_attribute(".murano-target-select", "aria-label") == "Tracked token shown"
    assert menu(page) == [[t, display_token(t)] for t in TARGETS]
    assert page.eval_on_selector(".murano-target-select", "(s) => s.value") == " Paris"
    assert page.inner_text(".murano-legend-title") == "Probability of “␣Paris”"
    assert page.eval_on_selector(".murano-select", "(s) => s.value") == "target"
    # Every cell's colour is Python's value of " Paris" there.
    for prompt in (0, 1):
        widget.prompt = prompt
        bridge.kernel_set("prompt")
        bridge.wait_frames()
        assert drawn_colours(bridge, tracked, prompt) == expected_colours(page, tracked, prompt, 1)
    # The canvas shows them: a cell's middle is its colour (the cell text aside).
    r = page.evaluate("() => window.debug.cellClientRect(3, 2)")
    pixel = bridge.pixel(r["x"] + 3, r["y"] + r["h"] / 2)
    want = expected_colours(page, tracked, 1, 1)[3][2]
    assert max(abs(a - b) for a, b in zip(pixel[:3], want[:3], strict=True)) <= 2, (pixel, want)

    # The tooltip and the readout give the value under the token's name.
    seq = tracked.positions(1).tolist()[2]
    value = fmt_prob(float(tracked.target_probs[3, 1, seq, 1]))
    page.mouse.move(*bridge.cell_center(3, 2))
    bridge.wait_frames()
    assert f"Probability of “␣Paris”\n{value}" in page.inner_text(".murano-tooltip") or (
        f"Probability of “␣Paris”\t{value}" in page.inner_text(".murano-tooltip")
    )
    page.mouse.move(0, 0)
    page.focus(".murano-canvas")
    bridge.wait_frames()
    focus = bridge.state()["focus"]
    seq = tracked.positions(1).tolist()[focus["position"]]
    value = fmt_prob(float(tracked.target_probs[focus["layerIndex"], 1, seq, 1]))
    readout = page.inner_text(".murano-readout")
    assert readout.endswith(f"; Probability of “␣Paris” {value}."), readout

    # The menu switches the token (a click, then the keyboard); Python hears it.
    page.select_option(".murano-target-select", " Rome")
    bridge.sync()
    assert widget.target == " Rome" and bridge.state()["target"] == " Rome"
    assert page.inner_text(".murano-legend-title") == "Probability of “␣Rome”"
    assert drawn_colours(bridge, tracked, 1) == expected_colours(page, tracked, 1, 0)
    page.focus(".murano-target-select")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    bridge.sync()
    assert widget.target == " is" and bridge.state()["target"] == " is"
    assert drawn_colours(bridge, tracked, 1) == expected_colours(page, tracked, 1, 2)

    # The chart follows it: the chosen token's line is on, the seventh's too once chosen.
    def lines():
        series = bridge.debug("trajectory")["series"]
        return {s["token"]: s["shown"] for s in series if s["kind"] == "target"}

    assert lines()[" is"] and not lines()[" Italy"]
    page.select_option(".murano-target-select", " Italy")
    bridge.sync()
    assert widget.target == " Italy" and lines()[" Italy"]
    assert drawn_colours(bridge, tracked, 1) == expected_colours(page, tracked, 1, 6)

    # Python chooses: the view follows.
    widget.target = " Paris"
    bridge.kernel_set("target")
    bridge.wait_frames()
    assert bridge.state()["target"] == " Paris"
    assert page.eval_on_selector(".murano-target-select", "(s) => s.value") == " Paris"
    assert drawn_colours(bridge, tracked, 1) == expected_colours(page, tracked, 1, 1)
    # Another metric: no token menu.
    page.select_option(".murano-select", "prob")
    bridge.sync()
    assert widget.metric == "prob" and page.is_hidden(".murano-target-select")
    assert page.inner_text(".murano-legend-title") == "Top-1 probability"
    assert not page.errors


def test_without_targets_the_metric_is_offered_disabled_and_no_menu_shows(page, tracked):
    import dataclasses

    plain = dataclasses.replace(
        tracked, targets=None, target_token_ids=None, target_probs=None, target_ranks=None
    )
    bridge = Bridge(page, LogitLensWidget(plain))
    option = page.eval_on_selector(
        ".murano-select option[value='target']", "(o) => [o.disabled, o.textContent]"
    )
    assert option == [True, "Probability of a tracked token (no tokens are tracked)"]
    assert page.is_hidden(".murano-target-select")
    assert bridge.state()["target"] == ""
    assert not page.errors


def test_the_exported_page_shows_the_chosen_token(offline_page, tracked, tmp_path):
    page = offline_page
    widget = LogitLensWidget(tracked, metric="target", target=" is")
    page.goto(widget.save_html(tmp_path / "lens.html").as_uri())
    page.wait_for_selector(".murano-canvas")
    assert page.inner_text(".murano-legend-title") == "Probability of “␣is”"
    assert page.eval_on_selector(".murano-target-select", "(s) => s.value") == " is"
    assert not page.refused
