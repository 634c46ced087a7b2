"""The live lens widget's front end in headless Chromium, with a fake kernel in the page.

The page renders the real built bundle (``harness.py``) over a state that carries the live traits
(``live``, ``prompts``, ``targets``, ``live_status``, ``patch``, ``_patch_meta``,
``_patch_sections``: the contract in the README's "A live lens"). The fake kernel answers
``hello`` as Python does; every other request is recorded (``window.model.messages``) and the
test answers it as Python would: it computes the new payload here with the package
(``run_logit_lens`` on the prompts, ``patch_lens`` for a patch), pushes the traits into the page
as the kernel syncs them, then sends the reply (``done``, ``error`` or ``superseded``).
"""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from harness import ARTIFACTS, ORIGIN, STATIC, encode, serve, widget_state
from lens_data import PLAIN_TOKENS, make_result
from live_driver import counting_frames

from murano_widgets import LogitLensWidget, load_demo_model, patch_lens
from murano_widgets.export import base64_sections, standalone_page
from murano_widgets.live.patching import patch_state
from murano_widgets.payload.codec import section_bytes
from murano_widgets.payload.diff import diff_payload
from murano_widgets.run import run_logit_lens

pytestmark = pytest.mark.browser

NO_KERNEL = (
    "Editing needs a running kernel: run the notebook to type prompts, track tokens or patch."
)
FRANCE = "The capital of France is"
ITALY = "The capital of Italy is"
IDLE = {"state": "idle", "request": -1, "action": "", "message": ""}

# A kernel that answers hello at once, as Python's widget does (not queued behind work); the
# test answers every other request itself.
KERNEL = """window.kernel = (msg, model) => {
  if (msg.action === "hello") setTimeout(() => model.reply({ action: "hello", id: msg.id, live: true }), 0);
};"""
# A saved notebook reopened without a kernel: messages go nowhere.
NO_REPLY = "window.kernel = () => {};"


@pytest.fixture(scope="module")
def model():
    return load_demo_model()


@pytest.fixture(scope="module")
def lens(model):
    """The demo model's lens of one prompt, of two, and of one with a tracked token."""
    return {
        "one": run_logit_lens(model, [FRANCE]),
        "two": run_logit_lens(model, [FRANCE, ITALY]),
        "tracked": run_logit_lens(model, [FRANCE], targets=[" Rome"]),
    }


def payload(result) -> dict[str, Any]:
    """The traits Python replaces for a new result: ``_meta`` and every section."""
    widget = LogitLensWidget(result)
    widget._details = True
    return widget_state(widget, ("_meta", "_sections"))


def live_state(result, **extra) -> dict[str, Any]:
    """A live widget's state as the front end receives it."""
    widget = LogitLensWidget(result)
    widget._details = True
    state = widget_state(widget)
    state.update(
        live=True,
        prompts=list(result.prompts),
        targets=list(result.targets or []),
        live_status=IDLE,
        patch=None,
        _patch_meta={},
        _patch_sections={},
    )
    state.update(extra)
    return state


def mount(page, state: dict[str, Any], kernel: str = KERNEL) -> None:
    serve(page)
    page.goto(f"{ORIGIN}/index.html")
    page.wait_for_function("window.mountReady === true")
    page.evaluate(f"() => {{ {kernel} }}")
    page.evaluate("(s) => window.mount(s, 0)", state)
    frames(page)


def frames(page, n: int = 2) -> None:
    page.evaluate(
        "(n) => new Promise((r) => { const f = (k) => k ? requestAnimationFrame(() => f(k - 1)) : r(); f(n); })",
        n,
    )


def kernel_set(page, name: str, value: Any) -> None:
    """Python sets a trait; the kernel syncs it to the page."""
    page.evaluate("([n, v]) => window.model.kernelSet(n, v)", [name, encode(value)])


def reply(page, action: str, request_id: int, message: str = "") -> None:
    page.evaluate(
        "(m) => window.model.reply(m)", {"action": action, "id": request_id, "message": message}
    )
    frames(page)


def requests(page) -> list[dict[str, Any]]:
    """The requests sent so far (hello left out)."""
    return [m for m in page.evaluate("() => window.model.messages") if m["action"] != "hello"]


def live(page) -> dict[str, Any]:
    return page.evaluate("() => window.debug.live.state")


def wait_for_kernel(page) -> None:
    page.wait_for_function("() => window.debug.live.state.kernel === 'ready'")


def type_prompt(page, text: str) -> None:
    box = page.locator(".murano-live-prompt")
    box.fill(text)
    box.press("Enter")


def status(page) -> dict[str, Any]:
    return page.evaluate(
        """() => { const s = document.querySelector('.murano-live-status');
             const e = document.querySelector('.murano-live-error');
             return { role: s.getAttribute('role'), live: s.getAttribute('aria-live'),
                      running: s.classList.contains('murano-running'), text: s.innerText.trim(),
                      error: e.hidden ? null : e.innerText.replace('×', '').trim(),
                      errorRole: e.getAttribute('role') }; }"""
    )


def test_not_live_shows_no_controls_and_says_nothing(page, lens):
    widget = LogitLensWidget(lens["one"])
    mount(page, widget_state(widget))
    assert page.is_hidden(".murano-live")
    assert page.is_hidden(".murano-patch")
    assert page.evaluate("() => window.model.messages") == []
    assert NO_KERNEL not in page.inner_text(".murano-root")


def test_typing_a_prompt_runs_it_and_the_reply_shows_its_column(page, lens):
    mount(page, live_state(lens["one"]))
    wait_for_kernel(page)
    box = page.locator(".murano-live-prompt")
    assert box.get_attribute("placeholder") == "Type a prompt and press Enter"
    assert box.get_attribute("aria-label") == "Type a prompt and press Enter"
    type_prompt(page, ITALY)
    (sent,) = requests(page)
    assert sent["action"] == "add_prompt" and sent["text"] == ITALY
    assert isinstance(sent["id"], int)
    shown = status(page)
    assert shown["running"] and shown["role"] == "status" and shown["live"] == "polite"
    assert f"“{ITALY}”" in shown["text"]
    # Python's own description of the work, in live_status, takes the line.
    kernel_set(
        page,
        "live_status",
        {
            "state": "running",
            "request": sent["id"],
            "action": "add_prompt",
            "message": "running the lens on 'The capital of Italy is'…",
        },
    )
    assert status(page)["text"] == "running the lens on 'The capital of Italy is'…"
    # Meanwhile the old view stays usable: pin a cell.
    r = page.evaluate("() => window.debug.cellClientRect(2, 1)")
    page.mouse.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    assert page.evaluate("() => window.debug.state.selected")["position"] == 1
    # Python: the new payload (_meta, then _sections, as separate syncs), the prompts, the new
    # prompt shown, the status, then the reply.
    new = payload(lens["two"])
    kernel_set(page, "_meta", new["_meta"])
    assert page.is_visible(".murano-heatmap"), "the old view stays while the sections arrive"
    kernel_set(page, "_sections", new["_sections"])
    kernel_set(page, "prompts", [FRANCE, ITALY])
    kernel_set(page, "prompt", 1)
    kernel_set(page, "live_status", IDLE)
    reply(page, "done", sent["id"])
    state = page.evaluate("() => window.debug.state")
    assert state["prompt"] == 1
    assert page.input_value(".murano-prompt-control .murano-slider") == "1"
    assert page.inner_text(".murano-prompt-text") == ITALY
    assert page.inner_text(".murano-dims").endswith("× 5 tokens")
    # The new column is drawn: the input strip shows the new prompt's tokens.
    assert page.evaluate("() => window.debug.layout.nPositions") == 5
    after = status(page)
    assert not after["running"] and after["error"] is None
    assert after["text"] == f"Added “{ITALY}”."
    assert box.input_value() == "", "the box is emptied once the prompt is in"
    assert page.is_enabled(".murano-live-remove")
    assert page.get_attribute(".murano-live-remove", "aria-label") == "Remove prompt 1"
    page.click(".murano-live-remove")
    assert requests(page)[-1] == {
        "action": "remove_prompt",
        "index": 1,
        "id": requests(page)[-1]["id"],
    }
    assert not page.errors


def test_an_error_shows_one_line_that_can_be_dismissed(page, lens):
    mount(page, live_state(lens["one"]))
    wait_for_kernel(page)
    type_prompt(page, "   x")
    (sent,) = requests(page)
    reply(page, "error", sent["id"], "The prompt 'x' is too short: it needs 2 tokens.")
    shown = status(page)
    assert shown["error"] == "The prompt 'x' is too short: it needs 2 tokens."
    assert shown["errorRole"] == "alert"
    assert not shown["running"], "never a spinner left behind"
    assert page.evaluate("() => document.querySelectorAll('.murano-live-error').length") == 1
    page.click(".murano-live-dismiss")
    assert status(page)["error"] is None
    assert page.is_visible(".murano-heatmap")
    assert not page.errors


def test_a_second_request_supersedes_the_first(page, lens):
    mount(page, live_state(lens["one"]))
    wait_for_kernel(page)
    type_prompt(page, "The capital of Spain is")
    type_prompt(page, ITALY)
    first, second = requests(page)
    assert first["action"] == second["action"] == "add_prompt"
    assert second["id"] > first["id"]
    assert f"“{ITALY}”" in status(page)["text"]
    reply(page, "superseded", first["id"], f"superseded by request {second['id']}")
    shown = status(page)
    assert shown["running"] and f"“{ITALY}”" in shown["text"], "only the latest request's state"
    # A Python-side error of the older one after all (never: it is answered once) is ignored.
    reply(page, "error", first["id"], "RuntimeError: late")
    assert status(page)["error"] is None
    reply(page, "done", second["id"])
    shown = status(page)
    assert not shown["running"] and shown["text"] == f"Added “{ITALY}”."
    assert live(page)["open"] == []


def test_a_request_without_a_reply_says_so(page, lens):
    mount(page, live_state(lens["one"]))
    wait_for_kernel(page)
    page.evaluate("() => window.debug.live.setTimeouts({ reply: 300 })")
    type_prompt(page, ITALY)
    assert status(page)["running"]
    # Waited for, not slept on: a loaded machine fires the 0.3 s timer late, never early.
    page.wait_for_function(
        "() => !document.querySelector('.murano-live-status').classList.contains('murano-running')"
    )
    shown = status(page)
    assert not shown["running"]
    assert shown["error"] == (
        "No reply from the kernel after 0.3 s (running the lens on “The capital of Italy is”): "
        "it may still be working, or the kernel stopped."
    )


def test_a_saved_notebook_without_a_kernel_says_editing_needs_one(page, lens):
    """live is true (saved), but hello gets no reply in 3 s: the line, no inputs; the view works."""
    mount(page, live_state(lens["one"]), kernel=NO_REPLY)
    (hello,) = page.evaluate("() => window.model.messages")
    assert hello["action"] == "hello" and isinstance(hello["id"], int)
    assert page.is_visible(".murano-live-prompt"), "usable while the kernel may still answer"
    page.wait_for_function("() => window.debug.live.state.kernel === 'none'", timeout=5000)
    assert page.inner_text(".murano-live-nokernel") == NO_KERNEL
    assert page.is_hidden(".murano-live-prompt") and page.is_hidden(".murano-live-track")
    layer = page.locator(".murano-layer-control .murano-slider")
    layer.focus()
    layer.press("ArrowLeft")
    frames(page)
    assert page.evaluate("() => window.debug.state.layer") == 4
    assert not page.errors


def open_export(page, state: dict[str, Any], path) -> None:
    """The HTML export's page of ``state`` (the widget's ``to_html``, with the live traits a live
    widget's export carries), opened with no kernel and no network."""
    html = standalone_page(
        state,
        esm=(STATIC / "logit_lens.js").read_text("utf-8"),
        css=(STATIC / "logit_lens.css").read_text("utf-8"),
        title="live lens",
    )
    path.write_text(html, encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector(".murano-canvas")
    page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")


def test_the_exported_page_says_editing_needs_a_kernel(offline_page, lens, tmp_path):
    """The HTML export of a live widget: the standalone model has no send."""
    widget = LogitLensWidget(lens["one"])
    page = offline_page
    open_export(page, {**widget._standalone_state(), "live": True}, tmp_path / "live.html")
    assert page.inner_text(".murano-live-nokernel") == NO_KERNEL
    assert (
        page.evaluate("() => document.querySelector('.murano-live-nokernel').getAttribute('role')")
        == "note"
    )
    for control in (".murano-live-prompt", ".murano-live-track", ".murano-picker-toggle"):
        assert page.is_hidden(control), control
    assert page.is_hidden(".murano-live-status")
    assert page.is_visible(".murano-heatmap")
    assert not page.refused
    # Not live: nothing said.
    open_export(page, widget._standalone_state(), tmp_path / "plain.html")
    assert page.is_hidden(".murano-live")


def best_over_layers(result, prompt: int, position: int) -> list[tuple[str, float, int]]:
    """Every token in the top-k of a column's rows, its best probability and first row, best
    first (the picker's ranking, computed here from the result's floats)."""
    seq = int(result.positions(prompt)[position])
    best: dict[str, tuple[float, int]] = {}
    for row in range(len(result.layers)):
        for token, prob in zip(
            result.topk_tokens[row, prompt, seq].tolist(),
            result.topk_probs[row, prompt, seq].tolist(),
            strict=True,
        ):
            text = result.token_strings[token]
            if text not in best or prob > best[text][0]:
                best[text] = (prob, row)
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
    return [(text, prob, row) for text, (prob, row) in ranked]


def test_track_a_token_typed_picked_or_clicked(page, lens):
    result = lens["one"]
    mount(page, live_state(result))
    wait_for_kernel(page)
    track = page.locator(".murano-live-track")
    assert track.get_attribute("aria-label") == "Track a token"
    track.fill(" Rome")
    track.press("Enter")
    (sent,) = requests(page)
    assert sent["action"] == "track" and sent["text"] == " Rome" and sent["show"] is True
    assert "Tracking “␣Rome”…" in status(page)["text"]
    # Python: the payload with the target, the targets, and (show) the token and its metric,
    # in one state message whose keys may arrive in any order (here the token and metric before
    # the payload that has them), then the reply.
    new = payload(lens["tracked"])
    kernel_set(page, "target", " Rome")
    kernel_set(page, "metric", "target")
    kernel_set(page, "_meta", new["_meta"])
    kernel_set(page, "_sections", new["_sections"])
    kernel_set(page, "targets", [" Rome"])
    reply(page, "done", sent["id"])
    assert page.inner_text(".murano-chip .murano-chip-text") == "␣Rome"
    assert page.get_attribute(".murano-chip-remove", "aria-label") == "Stop tracking ␣Rome"
    chart = page.evaluate("() => window.debug.trajectory")
    (line,) = [s for s in chart["series"] if s["kind"] == "target"]
    assert line["token"] == " Rome" and line["shown"] and line["loaded"]
    # The heatmap follows Python's metric and target: coloured by the token's probability.
    view = page.evaluate("() => window.debug.state")
    assert (view["metric"], view["shownMetric"], view["target"]) == ("target", "target", " Rome")
    assert page.inner_text(".murano-legend-title") == "Probability of “␣Rome”"
    assert page.is_visible(".murano-target-select")
    # Nothing echoed back to Python: the view took Python's values.
    sent = page.evaluate("() => window.model.sent.map((m) => Object.keys(m.state))")
    assert not [keys for keys in sent if "metric" in keys or "target" in keys], sent
    page.click(".murano-chip-remove")
    assert requests(page)[-1]["action"] == "untrack" and requests(page)[-1]["text"] == " Rome"

    # The picker: the last position's tokens by their best probability over the layers.
    page.click(".murano-picker-toggle")
    assert page.get_attribute(".murano-picker-toggle", "aria-expanded") == "true"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "live-picker.png"))
    shown = page.eval_on_selector_all(
        ".murano-picker-item",
        "(bs) => bs.map((b) => [b.dataset.token, b.querySelector('.murano-picker-layer').textContent, b.disabled])",
    )
    want = best_over_layers(lens["tracked"], 0, 4)
    assert [token for token, _, _ in shown] == [text for text, _, _ in want]
    assert [layer for _, layer, _ in shown] == [f"L{result.layers[row]}" for _, _, row in want]
    assert [disabled for token, _, disabled in shown] == [t == " Rome" for t, _, _ in want]
    last_layer = [result.token_strings[t] for t in lens["tracked"].topk_tokens[-1, 0, 4].tolist()]
    assert len(shown) > len(last_layer)
    first = next(token for token, _, disabled in shown if not disabled)
    page.click(f".murano-picker-item[data-token='{first}']")
    assert requests(page)[-1]["action"] == "track" and requests(page)[-1]["text"] == first

    # The pinned cell's top-k: a press tracks the token.
    r = page.evaluate("() => window.debug.cellClientRect(1, 2)")
    page.mouse.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    tokens = page.eval_on_selector_all(
        ".murano-pin-token", "(bs) => bs.map((b) => b.dataset.token)"
    )
    seq = int(result.positions(0)[2])
    assert tokens == [
        result.token_strings[t] for t in lens["tracked"].topk_tokens[1, 0, seq].tolist()
    ]
    # The picker follows the pinned column.
    head = page.inner_text(".murano-picker-head")
    assert head.startswith("Position 2 (") and "pinned" in head
    target = next(t for t in tokens if t != " Rome")
    page.click(f".murano-pin-token[data-token='{target}']")
    assert requests(page)[-1]["action"] == "track" and requests(page)[-1]["text"] == target
    assert not page.errors


def assert_lights_the_cone(page, debug: str, change) -> None:
    """The patch panel's cells, coloured by a change ``[rows, positions]`` that the patch at
    block 2, position 3 made: every cell it does not reach in one neutral colour, every cell it
    moves (inside the causal cone) in another."""
    colours = {
        (i, j): tuple(page.evaluate(f"([i, j]) => {debug}.cellColour(i, j)", [i, j]))
        for i in range(change.shape[0])
        for j in range(change.shape[1])
    }
    still = {colours[c] for c in colours if abs(float(change[c])) < 1e-4}
    assert len(still) == 1, "every cell the patch does not reach: one neutral colour"
    moved = [c for c in colours if abs(float(change[c])) > 0.05]
    assert moved and all(c[0] >= 2 and c[1] >= 3 for c in moved), "the causal cone"
    assert all(colours[c] not in still for c in moved)


def test_patch_a_cell_and_see_the_difference(page, model, lens):
    result = lens["two"]
    mount(page, live_state(result))
    wait_for_kernel(page)
    assert page.is_hidden(".murano-patch-control"), "nothing pinned"
    # Pin layer 2, position 3 (" France") of prompt 0.
    r = page.evaluate("() => window.debug.cellClientRect(2, 3)")
    page.mouse.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    assert page.is_visible(".murano-patch-control")
    assert page.inner_text(".murano-patch-where") == "prompt 0 · L2 · pos 3"
    options = page.eval_on_selector_all(
        ".murano-patch-source option", "(os) => os.map((o) => o.value)"
    )
    assert options == ["1", "zero", "mean"]
    page.select_option(".murano-patch-source", "zero")
    page.click(".murano-patch-run")
    sent = requests(page)[-1]
    assert sent == {
        "action": "patch",
        "prompt": 0,
        "layer": 2,
        "position": 3,
        "source": "zero",
        "id": sent["id"],
    }
    assert status(page)["text"] == "Patching prompt 0: block 2's output at position 3, with zero…"

    comparison = patch_lens(model, FRANCE, layer=2, position=3, source="zero", answers=[" Paris"])
    meta, arrays = diff_payload(comparison)
    kernel_set(page, "_patch_meta", meta)
    assert page.is_hidden(".murano-patch"), "no patch shown until its sections are there"
    kernel_set(page, "_patch_sections", section_bytes(arrays))
    # With a token tracked the kernel's state also holds its probability before and after.
    tracked = patch_lens(model, FRANCE, layer=2, position=3, source="zero", token=" Rome")
    state = patch_state(comparison, 0, "zero")
    state.update(
        (key, value)
        for key, value in patch_state(tracked, 0, "zero", target=" Rome").items()
        if key.startswith("target")
    )
    kernel_set(page, "patch", state)
    reply(page, "done", sent["id"])
    assert page.is_visible(".murano-patch")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "live-patch.png"))
    assert page.inner_text(".murano-patch-title") == (
        "Prompt 0: block 2's output at position 3 (␣France) set to zero."
    )
    # Said once: the diff inside the heatmap has no title, note or prompt lines of its own.
    panel = page.inner_text(".murano-patch")
    assert panel.count("zero") == 1 and "vs" not in panel and "the same prompt" not in panel, panel
    # Its columns lie under the heatmap's: the same width, starting at the same x.
    debug = "document.querySelector('.murano-patch-diff').__muranoDiffDebug"
    heat, diff_ = page.evaluate(
        f"() => [window.debug.cellClientRect(0, 0), {debug}.cellClientRect(0, 0)]"
    )
    assert abs(diff_["w"] - heat["w"]) <= 1 and abs(diff_["x"] - heat["x"]) <= 1, (heat, diff_)
    answer = page.inner_text(".murano-patch-answer")
    assert answer.startswith("Answer ␣Paris: ") and " → " in answer
    assert " · Tracked ␣Rome: " in answer, answer
    # The diff is the lens diff's own view, in the widget: the cells the patch reaches light up.
    assert page.evaluate(f"() => {debug}.state.metric") == "delta_prob"
    assert_lights_the_cone(page, debug, comparison.delta_prob[:, 0, :])
    # Every heatmap metric's change is in the panel's menu too (the same payload): the entropy's.
    page.select_option(".murano-patch-diff .murano-diff-metric-select", "delta_entropy")
    assert page.evaluate(f"() => {debug}.state.metric") == "delta_entropy"
    assert_lights_the_cone(page, debug, comparison.metric_deltas["delta_entropy"][:, 0, :])
    legend = page.inner_text(".murano-patch-diff .murano-diff-legend")
    assert "Change in entropy (bits) (b − a)" in legend
    page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "live-patch-entropy.png"))
    # The heatmap still works beside it, and the patch clears.
    page.click(".murano-patch-clear")
    assert requests(page)[-1]["action"] == "clear_patch"
    kernel_set(page, "patch", None)
    kernel_set(page, "_patch_meta", {})
    kernel_set(page, "_patch_sections", {})
    frames(page)
    assert page.is_hidden(".murano-patch")
    assert page.evaluate(f"() => {debug}") is None
    assert not page.errors


def test_a_patch_on_a_row_after_attention_is_refused_in_place(page):
    from attribution_data import with_sublayers

    mount(page, live_state(with_sublayers(make_result(n_layers=4))))
    wait_for_kernel(page)
    r = page.evaluate("() => window.debug.cellClientRect(2, 1)")  # L1 attn
    page.mouse.click(r["x"] + r["w"] / 2, r["y"] + r["h"] / 2)
    assert page.is_visible(".murano-patch-reason")
    assert page.is_hidden(".murano-patch-run")


def test_slider_moves_redraw_in_the_next_frame_while_a_request_is_pending(page):
    """A GPT-2-shaped view (12 layers, two prompts of 20 tokens): a request in flight (its
    status line animating) and the layer slider moved 40 times: each move is drawn in the next
    animation frame, showing the slider's layer, as with nothing pending. Counted in frames, not
    milliseconds, so that it holds on any machine under any load; ``bench/live_frontend.py``
    times the redraw on a quiet machine."""
    words = PLAIN_TOKENS[:20]
    result = make_result(prompts=[words, list(reversed(words))], n_layers=12)
    mount(page, live_state(result))
    wait_for_kernel(page)
    measure = """async (n) => {
      const slider = document.querySelector('.murano-layer-control .murano-slider');
      $FRAMES
      const out = { frames: [], layer: [], slider: [], ms: [] };
      for (let k = 0; k < n; k++) {
        const drawn = window.debug.nextDraw().then((ms) => ({ ms, frame: frames.count, layer: window.debug.state.layer }));
        const f0 = frames.count;
        slider.value = String((Number(slider.value) + 5) % (Number(slider.max) + 1));
        slider.dispatchEvent(new Event('input', { bubbles: true }));
        const d = await drawn;
        out.frames.push(d.frame - f0);
        out.layer.push(d.layer);
        out.slider.push(Number(slider.value));
        out.ms.push(d.ms);
        await new Promise((r) => requestAnimationFrame(r));
      }
      frames.on = false;
      return out;
    }"""
    measure = counting_frames(measure)
    idle = page.evaluate(measure, 40)
    type_prompt(page, "The capital of Spain is")
    assert status(page)["running"]
    pending = page.evaluate(measure, 40)
    assert status(page)["running"], "still pending"
    medians = {
        name: statistics.median(run["ms"]) for name, run in (("idle", idle), ("pending", pending))
    }
    print(f"draw (ms, median): {medians}")
    for run in (idle, pending):
        assert run["frames"] == [1] * 40, run
        assert run["layer"] == run["slider"], run


def test_patch_state_from_python_renders_in_an_export(offline_page, model, lens, tmp_path):
    """A widget saved with a patch shows it without a kernel (no "Clear patch": nothing to ask)."""
    comparison = patch_lens(model, FRANCE, layer=1, position=2, source="mean", answers=[" Paris"])
    meta, arrays = diff_payload(comparison)
    widget = LogitLensWidget(lens["one"])
    state = {
        **widget._standalone_state(),
        "live": True,
        "patch": {"prompt": 0, "layer": 1, "position": 2, "source": "mean", "answer": " Paris"},
        "_patch_meta": meta,
        "_patch_sections": base64_sections(section_bytes(arrays)),
    }
    page = offline_page
    open_export(page, state, tmp_path / "patched.html")
    page.wait_for_selector(".murano-diff-canvas")
    assert (
        page.inner_text(".murano-patch-title")
        == "Block 1's output at position 2 (␣of) set to its mean."
    )
    assert page.is_hidden(".murano-patch-clear")
    assert page.inner_text(".murano-live-nokernel") == NO_KERNEL


def test_removing_keeps_the_focus_in_the_widget(page, model, lens):
    """A control whose action removes it (a chip's ×) or disables it ("Remove prompt" with one
    prompt left) hands the focus on inside the widget: dropped to the page, a notebook's keys
    would run and move cells."""
    focused = "() => document.activeElement && document.activeElement.className"

    def python_sets(result) -> None:
        new = payload(result)
        kernel_set(page, "_meta", new["_meta"])
        kernel_set(page, "_sections", new["_sections"])
        kernel_set(page, "prompts", list(result.prompts))
        kernel_set(page, "targets", list(result.targets or []))

    mount(page, live_state(lens["two"]))
    wait_for_kernel(page)
    kernel_set(page, "prompt", 1)
    page.focus(".murano-live-remove")
    page.keyboard.press("Enter")
    (sent,) = requests(page)
    assert sent["action"] == "remove_prompt" and sent["index"] == 1
    python_sets(lens["one"])
    kernel_set(page, "prompt", 0)
    reply(page, "done", sent["id"])
    assert page.is_disabled(".murano-live-remove")
    assert "murano-live-prompt" in page.evaluate(focused)

    # Two chips: the first's × goes with it, the focus to the chip in its place, then to the
    # track box when none is left.
    python_sets(run_logit_lens(model, [FRANCE], targets=[" Rome", " Paris"]))
    frames(page)
    page.focus(".murano-chip-remove")
    page.keyboard.press("Enter")
    assert requests(page)[-1]["action"] == "untrack"
    python_sets(run_logit_lens(model, [FRANCE], targets=[" Paris"]))
    frames(page)
    assert page.evaluate(focused) == "murano-chip-remove"
    assert page.evaluate("() => document.activeElement.dataset.token") == " Paris"
    page.keyboard.press("Enter")
    python_sets(lens["one"])
    frames(page)
    assert "murano-live-track" in page.evaluate(focused)
    assert not page.errors
