"""Long traces in the browser (issue 51): the overview, find and jump, the ``position`` trait.

A synthetic 6-layer result of 600 positions (``make_large_result``) goes through the real widget
and the built front end. One token of its string table is hostile HTML, placed at known input
positions and cells; the expected hits are counted from the result's tensors here (torch), not
by the code under test.
"""

from __future__ import annotations

import re

import pytest
from harness import Bridge
from lens_data import make_large_result

from murano_widgets import LogitLensWidget
from murano_widgets.tokens import display_token

HOSTILE = '<img src=x onerror="window.__pwned=1">'
N_LAYERS, N_POSITIONS = 6, 600


@pytest.fixture(scope="module")
def long_result():
    result = make_large_result(N_LAYERS, N_POSITIONS, n_prompts=2, seed=51)
    hostile_id = max(result.token_strings)
    result.token_strings[hostile_id] = HOSTILE
    # The hostile token appears at these input positions and top-1 cells of prompt 0 (and maybe
    # elsewhere by chance: the expected count below reads the tensors).
    result.input_ids[0, [250, 410]] = hostile_id
    result.predicted_tokens[3, 0, 120] = hostile_id
    result.predicted_tokens[5, 0, 480] = hostile_id
    return result, hostile_id


def expected_hits(result, hostile_id: int) -> list[tuple[int, int]]:
    """(position, layer index or -1 for the input) of every hostile token in prompt 0, in
    reading order: position, then the input, then the rows upwards."""
    hits = []
    for p in range(N_POSITIONS):
        if int(result.input_ids[0, p]) == hostile_id:
            hits.append((p, -1))
        for i in range(N_LAYERS):
            if int(result.predicted_tokens[i, 0, p]) == hostile_id:
                hits.append((p, i))
    return hits


def overview(bridge: Bridge) -> dict:
    return bridge.debug("overview")


def viewport_box(page) -> dict:
    return page.evaluate(
        """() => {
          const strip = document.querySelector('.murano-overview').getBoundingClientRect();
          const box = document.querySelector('.murano-overview-viewport').getBoundingClientRect();
          return { left: box.left - strip.left, width: box.width, stripLeft: strip.left,
                   stripWidth: strip.width, top: strip.top, height: strip.height };
        }"""
    )


def visible_range(bridge: Bridge) -> tuple[int, int]:
    layout = bridge.layout()
    scroll = bridge.page.evaluate("() => document.querySelector('.murano-scroll').scrollLeft")
    first = int(scroll // layout["cellW"])
    shown = (layout["width"] - layout["labelW"]) / layout["cellW"]
    return first, int(shown)


def test_the_overview_shows_for_long_prompts_only_and_is_named(page, long_result):
    bridge = Bridge(page, LogitLensWidget(long_result[0]))
    slider = page.get_by_role("slider", name=re.compile("overview", re.I))
    assert slider.count() == 1 and slider.is_visible()
    assert overview(bridge)["shown"] is True
    # Its box is where the grid is: the prompt opens at its end.
    first, shown = visible_range(bridge)
    box = viewport_box(page)
    assert abs(box["left"] - first / N_POSITIONS * box["stripWidth"]) <= 2
    assert abs(box["width"] - max(3, shown / N_POSITIONS * box["stripWidth"])) <= 3
    bridge.screenshot("long_trace_overview.png")
    short = make_large_result(4, 30, n_prompts=1, seed=1)
    page.evaluate("() => { window.cleanup(); document.getElementById('host').innerHTML = ''; }")
    Bridge(page, LogitLensWidget(short))
    assert page.locator(".murano-longtrace").is_hidden()
    assert page.get_by_role("slider", name=re.compile("overview", re.I)).count() == 0


def test_click_and_drag_the_overview_move_the_grid_and_python_hears(page, long_result):
    widget = LogitLensWidget(long_result[0])
    bridge = Bridge(page, widget)
    box = viewport_box(page)
    y = box["top"] + box["height"] / 2
    # A click away from the box centres the grid there.
    x = box["stripLeft"] + 0.25 * box["stripWidth"]
    page.mouse.click(x, y)
    bridge.wait_frames()
    first, shown = visible_range(bridge)
    clicked = int(0.25 * N_POSITIONS)
    assert first <= clicked < first + shown
    assert abs((first + shown // 2) - clicked) <= 2
    assert overview(bridge)["firstPosition"] == first
    bridge.sync()
    assert widget.position == first
    # Dragging the box moves the grid with it: 100 px of overview is 100 / width of the prompt.
    box = viewport_box(page)
    start = box["stripLeft"] + box["left"] + box["width"] / 2
    page.mouse.move(start, y)
    page.mouse.down()
    page.mouse.move(start + 50, y, steps=3)
    page.mouse.move(start + 100, y, steps=3)
    page.mouse.up()
    bridge.wait_frames()
    moved, _ = visible_range(bridge)
    expected = first + 100 / box["stripWidth"] * N_POSITIONS
    assert abs(moved - expected) <= 2, (moved, expected)
    box = viewport_box(page)
    assert abs(box["left"] - moved / N_POSITIONS * box["stripWidth"]) <= 2
    bridge.sync()
    assert widget.position == moved


def test_the_overview_keyboard_moves_the_grid(page, long_result):
    bridge = Bridge(page, LogitLensWidget(long_result[0]))
    page.focus(".murano-overview")
    page.keyboard.press("Home")
    bridge.wait_frames()
    assert visible_range(bridge)[0] == 0
    page.keyboard.press("ArrowRight")
    bridge.wait_frames()
    assert visible_range(bridge)[0] == 1
    first, shown = visible_range(bridge)
    page.keyboard.press("PageDown")
    bridge.wait_frames()
    assert visible_range(bridge)[0] in (first + shown, first + shown + 1)
    page.keyboard.press("End")
    bridge.wait_frames()
    layout = bridge.layout()
    scroll = page.evaluate("() => document.querySelector('.murano-scroll').scrollLeft")
    assert abs(scroll - layout["maxScroll"]) <= 1
    slider = page.locator(".murano-overview")
    assert int(slider.get_attribute("aria-valuenow")) == visible_range(bridge)[0]
    # The pooling menu: the choice is shown, switching makes one new pooled image.
    pooled = overview(bridge)["pooled"]
    page.select_option(".murano-overview-pool-select", "mean")
    bridge.wait_frames()
    assert overview(bridge)["mode"] == "mean"
    assert overview(bridge)["pooled"] == pooled + 1
    assert "mean per pixel column" in page.locator(".murano-overview-pool-select").inner_text()
    # Scrolling the grid does not pool again (the image is made once per metric and prompt).
    page.keyboard.press("Home")
    bridge.wait_frames()
    assert overview(bridge)["pooled"] == pooled + 1


def test_position_round_trips_to_python(page, long_result):
    widget = LogitLensWidget(long_result[0])
    bridge = Bridge(page, widget)
    bridge.sync()
    assert bridge.sent() == [], "opening at the prompt's end is not the user's move"
    widget.position = 300
    bridge.kernel_set("position")
    bridge.wait_frames()
    assert visible_range(bridge)[0] == 300
    assert overview(bridge)["firstPosition"] == 300
    bridge.sync()
    assert widget.position == 300, "Python's own value is not echoed"
    # The user scrolls the grid: the view reports the first position shown (throttled: one
    # message for a burst of scrolls).
    cell_w = bridge.layout()["cellW"]
    for k in range(1, 6):
        page.evaluate(
            "(x) => { document.querySelector('.murano-scroll').scrollLeft = x; }",
            int((100 + 5 * k) * cell_w),
        )
        bridge.wait_frames(1)
    messages = bridge.sync()
    assert [m["position"] for m in messages if "position" in m][-1] == 125
    assert len([m for m in messages if "position" in m]) <= 3
    assert widget.position == 125


def test_find_shows_hostile_tokens_as_text_and_steps_through_hits(page, long_result):
    result, hostile_id = long_result
    bridge = Bridge(page, LogitLensWidget(result))
    hits = expected_hits(result, hostile_id)
    assert len(hits) >= 4
    page.fill(".murano-find", "ONERROR")  # case-blind
    page.press(".murano-find", "Enter")
    bridge.wait_frames()
    assert page.locator(".murano-find-count").inner_text() == f"1 / {len(hits)}"
    found = page.locator(".murano-find-found").inner_text()
    assert display_token(HOSTILE) in found and f"position {hits[0][0]}" in found
    assert page.locator(".murano-root img").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    first, shown = visible_range(bridge)
    assert first <= hits[0][0] < first + shown
    state = bridge.state()
    assert state["focus"]["position"] == hits[0][0]
    if hits[0][1] >= 0:
        assert state["focus"]["layerIndex"] == hits[0][1]
    page.click(".murano-find-next")
    bridge.wait_frames()
    assert page.locator(".murano-find-count").inner_text() == f"2 / {len(hits)}"
    assert bridge.state()["focus"]["position"] == hits[1][0]
    # Previous twice wraps round to the last hit.
    page.click(".murano-find-prev")
    page.click(".murano-find-prev")
    bridge.wait_frames()
    assert page.locator(".murano-find-count").inner_text() == f"{len(hits)} / {len(hits)}"
    last = hits[-1]
    assert bridge.state()["focus"]["position"] == last[0]
    first, shown = visible_range(bridge)
    assert first <= last[0] < first + shown
    page.fill(".murano-find", "no such token anywhere")
    assert page.locator(".murano-find-found").inner_text() == "no match"


def test_jump_to_where_the_answer_is_first_top1(page):
    from murano_widgets import load_demo_model, show_logit_lens

    prompt = "The capital of France is Paris, and the capital of Italy is Rome. " * 8
    result = show_logit_lens(load_demo_model(), [prompt], answers=[" Paris"]).result
    first = next(iter(result.answer_sets.values()))
    seqs = result.positions(0).tolist()
    assert len(seqs) > 64
    # Python's own reading: the earliest position, then the lowest row, whose top-1 is the answer.
    expected = next(
        (
            (j, row)
            for j, seq in enumerate(seqs)
            for row in range(len(result.layers))
            if int(result.predicted_tokens[row, 0, seq]) in first.first_token_ids[0]
            and bool(result.max_probs[row, 0, seq].isfinite())
        ),
        None,
    )
    bridge = Bridge(page, LogitLensWidget(result))
    button = page.get_by_role("button", name="answer first top-1")
    assert button.is_visible()
    button.click()
    bridge.wait_frames()
    found = page.locator(".murano-find-found").inner_text()
    if expected is None:
        assert "never top-1" in found
        return
    position, row = expected
    assert f"first top-1 at position {position}, layer {result.layers[row]}" in found
    assert bridge.state()["focus"] == {"layerIndex": row, "position": position}
    first_shown, shown = visible_range(bridge)
    assert first_shown <= position < first_shown + shown
    marks = overview(bridge)["marks"]
    assert any(m["kind"] == "answer" and m["column"] == position for m in marks)
    bridge.screenshot("long_trace_answer.png")
