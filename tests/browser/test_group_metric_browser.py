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


# The live box: the page as a live widget with a kernel that answers hello only (as
# tests/browser/test_live_browser.py mounts it); the test plays Python's part with the package.
KERNEL = """window.kernel = (msg, model) => {
  if (msg.action === "hello") setTimeout(() => model.reply({ action: "hello", id: msg.id, live: true }), 0);
};"""


def test_a_word_typed_in_the_live_box_shows_its_word_group(page):
    from harness import ORIGIN, encode, serve, widget_state

    from murano_widgets.live.groups import add_word_group
    from murano_widgets.live.session import LiveSession

    model = load_demo_model()
    session = LiveSession(model)
    first = session.run([PROMPTS[0]])
    widget = LogitLensWidget(first)
    widget._details = True
    state = widget_state(widget)
    idle = {"state": "idle", "request": -1, "action": "", "message": ""}
    state.update(live=True, prompts=[PROMPTS[0]], targets=[], live_status=idle, patch=None)
    state.update(_patch_meta={}, _patch_sections={})
    serve(page)
    page.goto(f"{ORIGIN}/index.html")
    page.wait_for_function("window.mountReady === true")
    page.evaluate(f"() => {{ {KERNEL} }}")
    page.evaluate("(s) => window.mount(s, 0)", state)
    page.wait_for_function("() => window.debug.live.state.kernel === 'ready'")
    box = page.locator(".murano-live-group")
    assert box.get_attribute("aria-label") == "Track a word"
    box.fill("Paris")
    box.press("Enter")
    (sent,) = [m for m in page.evaluate("() => window.model.messages") if m["action"] != "hello"]
    assert (sent["action"], sent["text"]) == ("group", "Paris")
    # Python's part: the word's group, every prompt run again, the payload and the traits.
    grouped = add_word_group(session, first, sent["text"])
    word = TokenGroup.word(model.tokenizer, "Paris")
    assert grouped.group_names == ["Paris"] and grouped.group_token_ids == [[list(word.ids)]]
    alone = run_logit_lens(model, [PROMPTS[0]], groups={"Paris": word})
    new = LogitLensWidget(grouped)
    new._details = True
    for name, value in (
        ("group", "Paris"),
        ("metric", "group"),
        *widget_state(new, ("_meta", "_sections")).items(),
    ):
        page.evaluate("([n, v]) => window.model.kernelSet(n, v)", [name, encode(value)])
    page.evaluate(
        "(m) => window.model.reply(m)", {"action": "done", "id": sent["id"], "message": ""}
    )
    page.wait_for_function("() => window.debug.state.shownMetric === 'group'")
    view = page.evaluate("() => window.debug.state")
    assert (view["metric"], view["group"]) == ("group", "Paris")
    assert page.inner_text(".murano-legend-title") == "Probability of group “Paris”"
    # The grid's values are the word group's probabilities, as one call with it computes them.
    seqs = alone.positions(0).tolist()
    for row in range(len(alone.layers)):
        for j, seq in enumerate(seqs):
            details = page.evaluate("([i, j]) => window.debug.cellDetails(i, j)", [row, j])
            entry = next(m for m in details["metrics"] if m["spec"]["name"] == "group")
            assert abs(entry["value"] - float(alone.group_probs[row, 0, seq, 0])) <= 1 / 65535
    assert not page.errors


def test_groups_with_the_logit_and_tuned_lenses_side_by_side(page):
    from harness import ARTIFACTS

    from murano_widgets import load_demo_tuned_lens

    model = load_demo_model()
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(model)}
    both = run_logit_lens(model, PROMPTS, lens=lenses, groups={"paris": "Paris", "rome": "Rome"})
    widget = LogitLensWidget(both, metric="group", group="rome", lens_beside="tuned")
    bridge = Bridge(page, widget)
    assert bridge.state()["group"] == "rome"
    # Each grid is its own lens's group probabilities (one colour scale: probabilities, 0 to 1).
    assert drawn_colours(bridge, both["logit"], 0) == expected_colours(page, both["logit"], 0, 1)
    beside = page.evaluate(
        "([L, n]) => Array.from({length: L}, (_, i) => Array.from({length: n}, (_, j) => window.debug.besideCellColour(i, j)))",
        [len(both["tuned"].layers), both["tuned"].lengths[0]],
    )
    assert beside == expected_colours(page, both["tuned"], 0, 1)
    assert both["tuned"].group_probs.nan_to_num(0).ne(both["logit"].group_probs.nan_to_num(0)).any()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "groups-side-by-side.png"))
    # The lens menu: the tuned lens in the main grid, still the chosen group.
    page.select_option(".murano-lens-select", "tuned")
    bridge.sync()
    assert drawn_colours(bridge, both["tuned"], 0) == expected_colours(page, both["tuned"], 0, 1)
    assert not page.errors
