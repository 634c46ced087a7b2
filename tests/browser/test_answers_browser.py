"""Issue 12, part 2: the widget's answers and targets, in headless Chromium.

The widget is made the way a user makes it, ``show_logit_lens(load_demo_model(), prompts,
answers=..., targets=...)``, and rendered by the real front end (see ``harness.py``). What the
chart and the heatmap show is checked against the result's own tensors (the step's fields, which
``tests/test_answers.py`` checks against the reference lens), not against the front end's code:
the chart's lines follow the hovered, focused or pinned column and the layer slider, its values
are the result's, its rows sit level with the heatmap's, the answer's cells carry their corner
mark, and the "answer" metric colours cells by the answer's probability. Screenshots go to
tests/_artifacts/ for a person to look at.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from chromium import new_page
from harness import ARTIFACTS, Bridge, fmt_prob
from matplotlib import colormaps

from murano_widgets import LogitLensWidget

pytestmark = pytest.mark.browser

PROMPTS = ["The capital of France is", "The cat says", "one two three"]
# Prompt 1 accepts two forms (one of them several tokens long); prompt 2 has no answer.
ANSWERS = [" Paris", [" meow", " purr"], None]
HOSTILE = "<img src=x onerror=window.__pwned=1>"
TARGETS = [" Paris", " London", HOSTILE]
U16_STEP = 1 / 65535


@pytest.fixture(scope="module")
def demo():
    """The demo model's result for PROMPTS with answers and targets (one run per module)."""
    from murano_widgets import load_demo_model, show_logit_lens

    with pytest.warns(UserWarning, match="several tokens long"):  # the hostile target
        widget = show_logit_lens(load_demo_model(), PROMPTS, answers=ANSWERS, targets=TARGETS)
    return widget.result


def open_page(browser, width: int):
    return new_page(browser, width=width + 40, height=1100)


def mount(browser, result, width: int = 1280, dark: bool = False):
    context, page = open_page(browser, width)
    widget = LogitLensWidget(result)
    bridge = Bridge(page, widget, width=width, dark=dark)
    return context, page, widget, bridge


def chart(bridge: Bridge) -> dict:
    return bridge.debug("trajectory")


def series(bridge: Bridge) -> dict[str, dict]:
    return {s["key"]: s for s in chart(bridge)["series"]}


def expected_lines(result, prompt: int, position: int, mode: str) -> dict[str, np.ndarray]:
    """Each line's values by row, from the result's tensors (what the chart must show)."""
    seq = result.positions(prompt).tolist()[position]
    last = position == result.lengths[prompt] - 1
    rank = mode == "rank"
    out = {}
    if not rank:
        out["top1"] = result.max_probs[:, prompt, seq]
    out["final"] = (result.final_token_ranks if rank else result.final_token_probs)[:, prompt, seq]
    for s, scores in enumerate(result.answer_sets.values()):
        if scores.answers[prompt] is None or (s > 0 and not last):
            continue
        if last:
            out[f"answer:{s}"] = (scores.ranks if rank else scores.probs)[:, prompt]
        else:
            out[f"answer:{s}"] = (scores.token_ranks if rank else scores.token_probs)[
                :, prompt, seq
            ]
    for j in range(len(result.targets)):
        out[f"target:{j}"] = (result.target_ranks if rank else result.target_probs)[
            :, prompt, seq, j
        ]
    return {key: np.asarray(values, dtype=np.float64) for key, values in out.items()}


def assert_lines(bridge: Bridge, result, prompt: int, position: int, mode: str) -> None:
    """The chart shows this column's lines, in this mode, with the result's values."""
    drawn = series(bridge)
    expected = expected_lines(result, prompt, position, mode)
    assert list(drawn) == list(expected), (list(drawn), list(expected))
    for key, values in expected.items():
        got = np.array([np.nan if v is None else v for v in drawn[key]["values"]])
        assert drawn[key]["loaded"], key
        if mode == "rank":
            np.testing.assert_array_equal(got, np.minimum(values, 65535), err_msg=key)
        else:
            np.testing.assert_allclose(got, values, atol=U16_STEP, err_msg=key)


def svg_box(page) -> dict:
    return page.eval_on_selector(
        ".murano-traj-svg",
        "(e) => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y}; }",
    )


def line_points(page, key: str) -> list[tuple[float, float]]:
    """The points of a drawn line, in client coordinates."""
    text = page.eval_on_selector_all(
        f'.murano-traj-lines [data-series="{key}"] polyline',
        "els => els.map((e) => e.getAttribute('points')).join(' ')",
    )
    box = svg_box(page)
    return [
        (float(x) + box["x"], float(y) + box["y"]) for x, y in (p.split(",") for p in text.split())
    ]


def legend_value(page, key: str) -> str:
    return page.inner_text(f'.murano-traj-item[data-series="{key}"] .murano-traj-value')


# -- The chart ---------------------------------------------------------------------------------


def test_chart_follows_the_column_and_the_layer_slider(browser, demo):
    context, page, widget, bridge = mount(browser, demo)
    # Answers and targets were given: the chart asks for its lines' detail sections at once.
    assert bridge.sync() == [{"_details": True}]
    assert widget._details
    L = len(demo.layers)
    c = chart(bridge)
    assert (c["position"], c["source"], c["row"], c["mode"]) == (4, "last", L - 1, "prob")
    assert_lines(bridge, demo, 0, 4, "prob")
    # The legend gives each line's value at the highlighted layer; the teacher-forced answer.
    assert legend_value(page, "answer:0") == fmt_prob(float(demo.answer_probs[L - 1, 0]))
    assert legend_value(page, "target:1") == fmt_prob(
        float(demo.target_probs[L - 1, 0, demo.positions(0)[4], 1])
    )

    # The lines' points: one per layer, level with the heatmap's rows, placed by value.
    g = c["geometry"]
    box = svg_box(page)
    answer = demo.answer_probs[:, 0].numpy()
    points = line_points(page, "answer:0")
    assert len(points) == L
    for i, (x, y) in enumerate(points):
        cell = bridge.page.evaluate("([i, j]) => window.debug.cellClientRect(i, j)", [i, 0])
        assert abs(y - (cell["y"] + cell["h"] / 2)) <= 0.5, (i, y, cell)
        assert abs(x - (box["x"] + g["plotX"] + answer[i] * g["plotW"])) <= 0.5 + g["plotW"] / 65535

    # Hover: the chart follows the hovered column (the answer's first token there).
    page.mouse.move(*bridge.cell_center(2, 1))
    bridge.wait_frames()
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (1, "hover")
    assert_lines(bridge, demo, 0, 1, "prob")
    # ... and keeps it while the pointer goes over to the chart (down to the input tokens, then
    # along them, which hover no cell), to read it.
    layout = bridge.layout()
    canvas = page.eval_on_selector(".murano-canvas", "(e) => e.getBoundingClientRect().toJSON()")
    x1, _ = bridge.cell_center(2, 1)
    strip_y = canvas["y"] + layout["inputY"] + layout["stripH"] / 2
    page.mouse.move(x1, strip_y, steps=6)
    page.mouse.move(box["x"] + g["plotX"] + g["plotW"] / 2, strip_y, steps=12)
    page.mouse.move(box["x"] + g["plotX"] + g["plotW"] / 2, box["y"] + g["plotY"] + 5, steps=6)
    bridge.wait_frames()
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (1, "hover")
    page.mouse.move(2, 2)
    bridge.wait_frames()
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (4, "last")

    # The layer slider: the band and the markers move to the chosen row, the legend's values too.
    page.focus(".murano-layer-control .murano-slider")
    page.keyboard.press("Home")
    bridge.wait_frames()
    assert chart(bridge)["row"] == 0
    row0 = bridge.page.evaluate("() => window.debug.cellClientRect(0, 0)")
    band = page.eval_on_selector(".murano-traj-band", "(e) => e.getBoundingClientRect().toJSON()")
    assert abs(band["y"] + band["height"] / 2 - (row0["y"] + row0["h"] / 2)) <= 1
    marker = page.eval_on_selector(
        '.murano-traj-marker[data-series="answer:0"]', "(e) => e.getBoundingClientRect().toJSON()"
    )
    assert abs(marker["y"] + marker["height"] / 2 - (row0["y"] + row0["h"] / 2)) <= 1
    assert (
        abs(marker["x"] + marker["width"] / 2 - (box["x"] + g["plotX"] + answer[0] * g["plotW"]))
        <= 1
    )
    assert legend_value(page, "answer:0") == fmt_prob(float(demo.answer_probs[0, 0]))

    # A click on the chart chooses a layer: the slider and Python follow.
    y3 = bridge.page.evaluate("() => window.debug.cellClientRect(3, 0)")
    page.mouse.click(box["x"] + g["plotX"] + 10, y3["y"] + y3["h"] / 2)
    bridge.sync()
    assert bridge.state()["layer"] == 3 and widget.layer == demo.layers[3]
    assert chart(bridge)["row"] == 3

    # Keyboard focus in the heatmap moves the chart's column too.
    page.mouse.move(2, 2)
    page.focus(".murano-canvas")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    bridge.wait_frames()
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (1, "focus")
    assert_lines(bridge, demo, 0, 1, "prob")
    # ... also when the pointer rests on another cell: the last key wins over that hover.
    page.mouse.move(*bridge.cell_center(2, 3))
    bridge.wait_frames()
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (3, "hover")
    page.keyboard.press("ArrowLeft")
    bridge.wait_frames()
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (0, "focus")
    assert_lines(bridge, demo, 0, 0, "prob")

    # A pinned cell holds the chart once the pointer and the focus are elsewhere.
    page.mouse.click(*bridge.cell_center(4, 2))
    bridge.sync()
    page.mouse.move(2, 2)
    bridge.wait_frames()
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (2, "pinned")
    assert widget.selected["position"] == 2

    # Rank mode: ranks on a log scale; no top-1 line (its rank is 0 by definition).
    page.click('.murano-traj-mode-button[data-mode="rank"]')
    bridge.wait_frames()
    assert chart(bridge)["mode"] == "rank"
    assert_lines(bridge, demo, 0, 2, "rank")
    assert (
        page.get_attribute('.murano-traj-mode-button[data-mode="rank"]', "aria-pressed") == "true"
    )
    page.keyboard.press("Escape")  # unpin (the canvas still has the focus)
    page.click('.murano-traj-mode-button[data-mode="prob"]')
    bridge.sync()

    # The second prompt (two accepted forms) and the third (no answer: no answer line).
    page.focus(".murano-prompt-control .murano-slider")
    page.keyboard.press("ArrowRight")
    bridge.wait_frames()
    assert_lines(bridge, demo, 1, 2, "prob")
    assert "summed over 2 accepted forms" in page.get_attribute(
        '.murano-traj-item[data-series="answer:0"]', "title"
    )
    page.keyboard.press("ArrowRight")
    bridge.wait_frames()
    assert_lines(bridge, demo, 2, 2, "prob")
    assert not any(key.startswith("answer") for key in series(bridge))
    assert not page.errors
    context.close()


def test_legend_switches_lines_and_shows_targets_as_text(browser, demo):
    context, page, _, bridge = mount(browser, demo)
    bridge.sync()
    tokens = page.eval_on_selector_all(".murano-traj-token", "els => els.map((e) => e.textContent)")
    last = demo.positions(0).tolist()[-1]
    final = demo.predicted_words[-1][0][last].replace(" ", "␣")  # the demo model's last layer
    assert tokens == [final, "␣Paris", "␣Paris", "␣London", HOSTILE.replace(" ", "␣")]
    page.wait_for_timeout(100)
    assert page.evaluate("() => window.__pwned") is None
    assert page.evaluate("() => document.querySelectorAll('img').length") == 0
    # A legend entry is a toggle button: pressing it hides its line, pressing again shows it.
    item = '.murano-traj-item[data-series="target:0"]'
    assert page.get_attribute(item, "aria-pressed") == "true"
    assert page.locator('.murano-traj-lines [data-series="target:0"]').count() == 1
    page.focus(item)
    page.keyboard.press("Enter")
    assert page.get_attribute(item, "aria-pressed") == "false"
    assert page.locator('.murano-traj-lines [data-series="target:0"]').count() == 0
    assert page.locator('.murano-traj-lines [data-series="target:1"]').count() == 1
    page.keyboard.press("Space")
    assert page.get_attribute(item, "aria-pressed") == "true"
    # The chart's description names the column and every line (for screen readers).
    desc = page.text_content(".murano-traj-svg desc")
    assert desc.startswith("Probability across 6 layers at position 4")
    assert "answer ␣Paris: L0 " in desc and "target ␣London" in desc
    assert not page.errors
    context.close()


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_each_line_and_its_swatch_share_one_stroke_and_coinciding_lines_both_show(
    browser, demo, dark
):
    """Issue 21, item 10b: the top-1 and final-prediction lines coincide in the last layers and
    were both dashed (one hid the other), and the legend's swatches were drawn thinner than some
    lines. Each line's legend swatch has its line's colour, width, dash and opacity; every line
    differs from the others in (colour, dash); the widest is drawn first: the top-1's pale band,
    then the final prediction, so the narrower lines run on top of the wider ones."""
    context, page, _, bridge = mount(browser, demo, dark=dark)
    bridge.sync()
    strokes = page.evaluate(
        """() => {
          const read = (e) => e && [getComputedStyle(e).stroke, e.getAttribute('stroke-width'),
                                    e.getAttribute('stroke-dasharray'),
                                    e.getAttribute('stroke-opacity')];
          const lines = [...document.querySelectorAll('.murano-traj-lines > g')];
          return lines.map((g) => [g.dataset.series, read(g.querySelector('polyline')),
            read(document.querySelector(
              `.murano-traj-item[data-series="${g.dataset.series}"] .murano-traj-swatch line`))]);
        }"""
    )
    keys = [key for key, _, _ in strokes]
    assert keys[:3] == ["top1", "final", "answer:0"], keys
    assert set(keys) == set(series(bridge)), "every line is drawn"
    widths = [float(line[1]) for _, line, _ in strokes]
    assert widths == sorted(widths, reverse=True), "the widest first"
    for key, line, swatch in strokes:
        assert line == swatch, key
    looks = {(line[0], line[2]) for _, line, _ in strokes}
    assert len(looks) == len(strokes), strokes
    top1, final = (dict((k, line) for k, line, _ in strokes)[k] for k in ("top1", "final"))
    assert top1[2] == "none" and final[2] != "none" and float(top1[3]) < 0.5
    # Where they coincide (the last layer: the top-1 is the final prediction there), both are
    # drawn through the same points, the final prediction inside the top-1's band.
    points = {k: line_points(page, k) for k in ("top1", "final")}
    assert points["top1"][-1] == points["final"][-1]
    bridge.screenshot(f"trajectory_lines_{'dark' if dark else 'light'}.png")
    assert not page.errors
    context.close()


def test_without_answers_the_chart_has_top1_and_final_and_details_stay_lazy(browser):
    from lens_data import make_result

    result = make_result(prompts=[[" one", " two", " three", " four"]], n_layers=5)
    context, page, _, bridge = mount(browser, result)
    # Nothing asked for at mount (the payload's base sections stay all that is sent): the last
    # position's lines come with them ...
    assert bridge.sent() == []
    drawn = series(bridge)
    assert list(drawn) == ["top1", "final"]
    np.testing.assert_allclose(
        drawn["top1"]["values"], result.max_probs[:, 0, -1].numpy(), atol=U16_STEP
    )
    np.testing.assert_allclose(
        drawn["final"]["values"], result.final_token_probs[:, 0, -1].numpy(), atol=U16_STEP
    )
    assert page.is_hidden(".murano-traj-note")
    # ... and the pointer on another column asks for the detail sections once.
    page.mouse.move(*bridge.cell_center(2, 1))
    assert bridge.sync() == [{"_details": True}]
    drawn = series(bridge)
    assert chart(bridge)["position"] == 1
    np.testing.assert_allclose(
        drawn["final"]["values"], result.final_token_probs[:, 0, 1].numpy(), atol=U16_STEP
    )
    assert page.locator('.murano-traj-lines [data-series="final"] polyline').count() == 1
    assert page.is_hidden(".murano-traj-note")
    assert page.is_hidden(".murano-key-answer")
    options = page.eval_on_selector(
        '.murano-select option[value="answer"]', "(e) => [e.disabled, e.textContent]"
    )
    assert options[0] and "no answers were given" in options[1]
    context.close()


def final_legend(page) -> tuple[str, str, str]:
    """The final prediction's legend entry: its whole text, its token and its value."""
    item = '.murano-traj-item[data-series="final"]'
    return (
        page.inner_text(item),
        page.inner_text(f"{item} .murano-traj-token"),
        page.inner_text(f"{item} .murano-traj-value"),
    )


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_legend_shows_the_final_prediction_before_the_pointer_moves(browser, dark):
    """Issue 21, item 6: a fresh widget's legend said "final prediction … loading…" until the
    pointer moved, though nothing was loading. The pointer never moves here, and no message
    reaches the kernel: what the legend shows comes with the first payload."""
    from lens_data import make_result

    # Two prompts of different lengths, left-padded: the last position is not the last column.
    prompts = [[" one", " two", " three", " four", " five"], ["The", " cat", " says"]]
    result = make_result(prompts=prompts, n_layers=6, padding="left", seed=3)
    L = len(result.layers)
    context, page, widget, bridge = mount(browser, result, dark=dark)
    for prompt in (0, 1):
        if prompt:  # a prompt change from Python: the chart follows the new prompt's last token
            widget.prompt = prompt
            bridge.kernel_set("prompt")
            bridge.wait_frames()
        seq = int(result.positions(prompt)[-1])
        final = result.token_strings[int(result.final_tokens[prompt, seq])]
        probs = result.final_token_probs[:, prompt, seq].numpy()
        text, token, value = final_legend(page)
        assert "loading" not in text.lower(), text
        assert token == final.replace(" ", "␣")
        assert value == fmt_prob(float(probs[L - 1])), (value, probs[L - 1])
        c = chart(bridge)
        last = len(prompts[prompt]) - 1
        assert (c["prompt"], c["position"], c["source"]) == (prompt, last, "last")
        drawn = series(bridge)["final"]
        assert drawn["loaded"] and drawn["token"] == final
        np.testing.assert_allclose(drawn["values"], probs, atol=U16_STEP)
        assert page.locator('.murano-traj-lines [data-series="final"] polyline').count() == 1
        assert page.is_hidden(".murano-traj-note")
        bridge.screenshot(f"legend_final_{'dark' if dark else 'light'}_prompt{prompt}.png")
    assert bridge.sent() == []
    assert not page.errors
    context.close()


def test_a_cell_pinned_from_python_asks_for_its_lines(browser):
    """The chart opens on a cell pinned from Python (not the last position): its lines need the
    detail sections, so the chart asks for them; before, its legend read "loading…" while
    nothing had been asked for."""
    from lens_data import make_result

    result = make_result(prompts=[[" one", " two", " three", " four"]], n_layers=5)
    context, page = open_page(browser, 1280)
    widget = LogitLensWidget(result)
    widget.selected = {"layer_index": 2, "position": 1}
    bridge = Bridge(page, widget, width=1280)
    assert (chart(bridge)["position"], chart(bridge)["source"]) == (1, "pinned")
    assert bridge.sync() == [{"_details": True}]
    seq = int(result.positions(0)[1])
    np.testing.assert_allclose(
        series(bridge)["final"]["values"], result.final_token_probs[:, 0, seq], atol=U16_STEP
    )
    assert "loading" not in page.inner_text('.murano-traj-item[data-series="final"]').lower()
    assert page.is_hidden(".murano-traj-note")
    assert not page.errors
    context.close()


# -- The heatmap -------------------------------------------------------------------------------


def test_tooltip_gives_the_answer_its_rank_and_the_whole_answers_probability(browser, demo):
    context, page, _, bridge = mount(browser, demo)
    bridge.sync()
    page.focus(".murano-prompt-control .murano-slider")
    page.keyboard.press("ArrowRight")  # prompt 1: two accepted forms, one of three tokens
    last = demo.lengths[1] - 1
    seq = demo.positions(1).tolist()
    for i, position in [(2, last), (4, 0)]:
        page.mouse.move(*bridge.cell_center(i, position))
        bridge.wait_frames()
        tip = page.inner_text(".murano-tooltip")
        if position == last:
            rank = int(demo.answer_ranks[i, 1])
            assert f"whole answer\n{fmt_prob(float(demo.answer_probs[i, 1]))}" in tip, tip
        else:
            rank = int(demo.answer_token_ranks[i, 1, seq[position]])
            assert "whole answer" not in tip
        assert "answer\n␣meow" in tip and f"answer rank\nrank {rank}" in tip, tip
    context.close()


def test_tooltip_prints_a_probability_shown_twice_the_same_way(browser, demo):
    """Issue 21: a cell's top-k list and its rows print one probability with the same text (the
    top-1 and "Top-1 probability"; the final prediction, or the answer, when it is in the top-k
    below the top-1, and its row), and no positive probability reads "0%". The cells hovered are
    prompt 0's where the final prediction is in the top-k below the top-1: the demo model's
    " Paris" at rank 4 of layer 0 (0.023374) read "2.35%" there and "2.34%" in its row."""
    context, page, _, bridge = mount(browser, demo)
    bridge.sync()
    answer_ids = demo.answer_sets["answer"].first_token_ids[0]
    seqs = demo.positions(0).tolist()
    cells = [
        (i, j)
        for j, seq in enumerate(seqs)
        for i in range(len(demo.layers))
        if int(demo.final_tokens[0, seq]) in demo.topk_tokens[i, 0, seq, 1:].tolist()
    ]
    assert len(cells) >= 3, cells
    for i, j in cells:
        seq = seqs[j]
        page.mouse.move(*bridge.cell_center(i, j))
        bridge.wait_frames()
        top = page.eval_on_selector_all(
            ".murano-tooltip .murano-tt-prob", "els => els.map((e) => e.textContent)"
        )
        texts = page.eval_on_selector_all(
            ".murano-tooltip .murano-tt-rows > *", "els => els.map((e) => e.textContent)"
        )
        rows = dict(zip(texts[0::2], texts[1::2], strict=True))
        tokens = demo.topk_tokens[i, 0, seq].tolist()
        probs = demo.topk_probs[i, 0, seq].tolist()
        at = f"layer {i}, position {j}: top-k {top}, rows {rows}"
        assert len(top) == len(tokens), at
        assert top[0] == rows["Top-1 probability"], at
        final = tokens.index(int(demo.final_tokens[0, seq]))
        assert top[final] == rows["Probability of the final prediction"], at
        for answer in answer_ids:
            if answer in tokens:
                assert top[tokens.index(answer)] == rows["Probability of the answer's first token"]
        answer_prob = float(demo.answer_token_probs[i, 0, seq])
        shown = [*zip(top, probs, strict=True)]
        shown.append((rows["Probability of the answer's first token"], answer_prob))
        for text, prob in shown:
            assert prob <= 0 or not re.fullmatch(r"0(\.0*)?%", text), (text, prob, at)
    context.close()


def test_answer_marks_sit_on_the_answers_cells(browser, demo):
    context, page, _, bridge = mount(browser, demo)
    bridge.sync()
    page.mouse.move(2, 2)
    scores = demo.answer_sets["answer"]
    marked = unmarked = 0
    for prompt in range(len(PROMPTS)):
        if prompt:
            page.focus(".murano-prompt-control .murano-slider")
            page.keyboard.press("ArrowRight")
            page.mouse.move(2, 2)
        bridge.wait_frames()
        # Independently: the cell's top-1 id is the first token of an accepted answer form.
        firsts = {seq[0] for seq in scores.token_ids[prompt] or []}
        for i in range(len(demo.layers)):
            for position, seq in enumerate(demo.positions(prompt).tolist()):
                want = int(demo.predicted_tokens[i, prompt, seq]) in firsts
                r = page.evaluate("([i, j]) => window.debug.cellClientRect(i, j)", [i, position])
                pixel = np.array(bridge.pixel(r["x"] + 3, r["y"] + 3)[:3])
                cell = np.array(
                    page.evaluate("([i, j]) => window.debug.cellColour(i, j)", [i, position])[:3]
                )
                mark = min(np.abs(pixel - 0).max(), np.abs(pixel - 255).max()) <= 12
                assert mark == want, (prompt, i, position, pixel.tolist(), cell.tolist())
                if not want:
                    assert np.abs(pixel - cell).max() <= 6, (prompt, i, position)
                marked += want
                unmarked += not want
    assert marked >= 5 and unmarked > marked, (marked, unmarked)
    assert page.is_visible(".murano-key-answer")
    bridge.screenshot("answers_marks_light_1280.png")
    context.close()


def lut_colour(name: str, t: float) -> np.ndarray:
    k = round(min(1.0, max(0.0, t)) * 255) / 255
    return np.array(colormaps[name](k)[:3]) * 255


def test_answer_metric_colours_cells_by_the_answers_probability(browser, demo):
    context, page, widget, bridge = mount(browser, demo)
    bridge.sync()
    spec = next(m for m in widget._meta["metrics"] if m["name"] == "answer")
    options = page.eval_on_selector_all(
        ".murano-select option", "els => els.map((e) => [e.value, e.textContent, e.disabled])"
    )
    assert [spec["name"], spec["label"], False] in options
    page.select_option(".murano-select", "answer")
    bridge.sync()
    assert widget.metric == "answer" and bridge.state()["shownMetric"] == "answer"
    assert page.inner_text(".murano-legend-title") == spec["label"]
    page.mouse.move(2, 2)
    bridge.wait_frames()
    seqs = demo.positions(0).tolist()
    for i, position in [(0, 0), (2, 1), (5, 4), (1, 4), (4, 3)]:
        value = float(demo.answer_token_probs[i, 0, seqs[position]])
        r = page.evaluate("([i, j]) => window.debug.cellClientRect(i, j)", [i, position])
        pixel = np.array(bridge.pixel(r["x"] + r["w"] - 4, r["y"] + r["h"] - 3)[:3])
        assert np.abs(pixel - lut_colour("viridis", value)).max() <= 6, (i, position, value)
    # The last prompt has no answer: no colour anywhere (the hatch of "no value" shows).
    page.focus(".murano-prompt-control .murano-slider")
    page.keyboard.press("End")
    bridge.wait_frames()
    for i in range(len(demo.layers)):
        for position in range(demo.lengths[2]):
            assert page.evaluate("([i, j]) => window.debug.cellColour(i, j)", [i, position])[3] == 0
    assert page.is_visible(".murano-key-missing")
    details = page.evaluate("() => window.debug.cellDetails(0, 0)")
    assert next(m for m in details["metrics"] if m["spec"]["name"] == "answer")["value"] is None
    context.close()


# -- Layout, themes, export --------------------------------------------------------------------


@pytest.mark.parametrize(("width", "dark"), [(1280, False), (1280, True), (640, False)])
def test_chart_beside_when_there_is_room_below_otherwise(browser, demo, width, dark):
    context, page, _, bridge = mount(browser, demo, width=width, dark=dark)
    bridge.sync()
    canvas = page.eval_on_selector(".murano-canvas", "(e) => e.getBoundingClientRect().toJSON()")
    plot = page.eval_on_selector(".murano-traj-svg", "(e) => e.getBoundingClientRect().toJSON()")
    if width >= 1000:
        assert plot["left"] >= canvas["right"] + 8 and abs(plot["top"] - canvas["top"]) <= 1
        assert abs(plot["height"] - canvas["height"]) <= 1, "as tall as the heatmap: rows level"
    else:
        assert plot["top"] >= canvas["bottom"]
    root = page.eval_on_selector(".murano-root", "(e) => [e.scrollWidth, e.clientWidth]")
    assert root[0] <= root[1] + 1, "nothing sticks out of the widget"
    assert plot["right"] <= page.eval_on_selector(
        ".murano-root", "(e) => e.getBoundingClientRect().right"
    )
    # Every line is drawn in a colour apart from the background, in either theme.
    colours = page.eval_on_selector_all(
        ".murano-traj-lines polyline", "els => els.map((e) => getComputedStyle(e).stroke)"
    )
    background = page.eval_on_selector(".murano-root", "(e) => getComputedStyle(e).backgroundColor")
    assert len(colours) == len(series(bridge)) and background not in colours
    bridge.screenshot(f"answers_chart_{'dark' if dark else 'light'}_{width}.png")
    assert not page.errors
    context.close()


def test_exported_page_shows_the_chart_and_the_marks(browser, demo, tmp_path):
    path = LogitLensWidget(demo).save_html(tmp_path / "answers.html")
    context, page = open_page(browser, 1280)
    refused = []
    page.route(
        lambda url: not url.startswith("file://"),
        lambda route: (refused.append(route.request.url), route.abort()),
    )
    page.goto(path.as_uri())
    page.wait_for_function(
        "() => window.muranoWidget && document.querySelector('.murano-traj-lines polyline')"
    )
    L = len(demo.layers)
    assert page.inner_text(
        '.murano-traj-item[data-series="answer:0"] .murano-traj-value'
    ) == fmt_prob(float(demo.answer_probs[L - 1, 0]))
    keys = page.eval_on_selector_all(".murano-traj-item", "els => els.map((e) => e.dataset.series)")
    assert keys == ["top1", "final", "answer:0", "target:0", "target:1", "target:2"]
    assert page.is_visible(".murano-key-answer")
    assert page.evaluate("() => window.__pwned") is None
    assert not refused and not page.errors
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "answers_export.png"))
    context.close()
