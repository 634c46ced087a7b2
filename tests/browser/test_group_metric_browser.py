"""The heatmap coloured by a token group's probability (the metric ``"group"``): the colours are
Python's ``group_probs`` of the group the widget's ``group`` names; the group menu beside the
colour menu switches groups and syncs the trait; a group's name is text, never markup; the
trajectory chart draws a line per group and their sum, read back as Python computed them."""

from __future__ import annotations

import pytest
from harness import Bridge

from murano_widgets import LogitLensWidget, TokenGroup, load_demo_model
from murano_widgets.run import run_logit_lens

pytestmark = pytest.mark.browser

PROMPTS = ["The capital of France is", "The capital of Italy is"]
HOSTILE = '<img src=x onerror="window.pwned=1">$&'


@pytest.fixture(scope="module")
def grouped():
    model = load_demo_model()
    groups = {
        "paris": TokenGroup.word(model.tokenizer, "Paris"),
        HOSTILE: TokenGroup.tokens(model.tokenizer, [" Rome", " is"]),
    }
    return run_logit_lens(model, PROMPTS, groups=groups)


def stored(p: float) -> float:
    """A probability as the payload stores it (to 1/65535; a non-zero one never as 0)."""
    raw = round(p * 65535)
    return (raw if raw or p == 0 else 1) / 65535


def expected_colours(page, result, prompt: int, g: int) -> list[list[list[int]]]:
    seqs = result.positions(prompt).tolist()
    ks = [
        [round(stored(float(result.group_probs[row, prompt, s, g])) * 255) for s in seqs]
        for row in range(len(result.layers))
    ]
    return page.evaluate(
        "(ks) => ks.map((row) => row.map((k) => [...window.lens.scaleColour('viridis', k / 255), 255]))",
        ks,
    )


def drawn_colours(bridge, result, prompt: int) -> list[list[list[int]]]:
    return bridge.page.evaluate(
        "([L, n]) => Array.from({length: L}, (_, i) => Array.from({length: n}, (_, j) => window.debug.cellColour(i, j)))",
        [len(result.layers), result.lengths[prompt]],
    )


def test_the_group_menu_switches_the_grid_to_the_groups_probabilities(page, grouped):
    widget = LogitLensWidget(grouped, metric="group", prompt=1)
    bridge = Bridge(page, widget)
    state = bridge.state()
    assert (state["metric"], state["shownMetric"], state["group"]) == ("group", "group", "paris")
    assert page.is_visible(".murano-group-select") and page.is_hidden(".murano-target-select")
    options = page.eval_on_selector_all(
        ".murano-group-select option", "(os) => os.map((o) => [o.value, o.textContent])"
    )
    assert options == [["paris", "paris"], [HOSTILE, HOSTILE]]
    assert page.inner_text(".murano-legend-title") == "Probability of group “paris”"
    assert drawn_colours(bridge, grouped, 1) == expected_colours(page, grouped, 1, 0)

    # The menu switches the group; Python hears it; the hostile name is text everywhere.
    page.select_option(".murano-group-select", HOSTILE)
    bridge.sync()
    assert widget.group == HOSTILE and bridge.state()["group"] == HOSTILE
    assert page.inner_text(".murano-legend-title") == f"Probability of group “{HOSTILE}”"
    assert drawn_colours(bridge, grouped, 1) == expected_colours(page, grouped, 1, 1)
    assert (
        page.evaluate("() => document.querySelectorAll('.murano-root img, .murano img').length")
        == 0
    )
    assert page.evaluate("() => window.pwned") is None

    # The tooltip names the group shown, with Python's value.
    seq = grouped.positions(1).tolist()[2]
    details = page.evaluate("() => window.debug.cellDetails(3, 2)")
    entry = next(m for m in details["metrics"] if m["spec"]["name"] == "group")
    assert entry["label"] == f"Probability of group “{HOSTILE}”"
    assert abs(entry["value"] - float(grouped.group_probs[3, 1, seq, 1])) <= 1 / 65535

    # The chart: a line per group and their sum, as Python computed them at its column.
    series = [s for s in bridge.debug("trajectory")["series"] if s["kind"].startswith("group")]
    assert [s["label"] for s in series] == ["paris", HOSTILE, "sum of groups"]
    column = bridge.debug("trajectory")["position"]
    seq = grouped.positions(1).tolist()[column]
    python = grouped.group_probs[:, 1, seq, :].double().numpy()
    for g in range(2):
        assert all(
            abs(v - stored(float(p))) <= 1e-6
            for v, p in zip(series[g]["values"], python[:, g], strict=True)
        )
    assert all(
        abs(v - sum(stored(float(p)) for p in row)) <= 1e-6
        for v, row in zip(series[2]["values"], python, strict=True)
    )

    # Python chooses: the view follows; another metric hides the menu.
    widget.group = "paris"
    bridge.kernel_set("group")
    bridge.wait_frames()
    assert page.eval_on_selector(".murano-group-select", "(s) => s.value") == "paris"
    assert drawn_colours(bridge, grouped, 1) == expected_colours(page, grouped, 1, 0)
    page.select_option(".murano-select", "prob")
    bridge.sync()
    assert page.is_hidden(".murano-group-select")
    assert not page.errors
