"""Issue 14, parts 2 and 3: generated tokens and chat roles in the widget, in headless Chromium.

The widgets are made the way a user makes them (``show_logit_lens(load_demo_model(), prompts,
generate=N)`` and ``chat=[...]``) and rendered by the real front end (see ``harness.py``). What
the page shows is checked against the result's own fields (``generation_starts``,
``token_roles``, which tests/test_generation.py and tests/test_chat.py check against transformers
and the template's text): the boundary rule sits at the first generated column, generated input
tokens are italic on a tint, each token carries its role's band, hiding the template's tokens
keeps every other column's true position (axis, pins, keyboard), and the readout says
"generated". Screenshots go to tests/_artifacts/ for a person to look at.
"""

from __future__ import annotations

import pytest
from chromium import new_page
from harness import ARTIFACTS, Bridge

from murano_widgets.tokens import display_token

pytestmark = pytest.mark.browser

PROMPTS = ["The capital of France is", "one two three"]
# A small chat template for the demo model (it was not trained for chat; the roles are what
# these tests look at).
TEMPLATE = (
    "{% for m in messages %}<|endoftext|>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|endoftext|>assistant:{% endif %}"
)
CHAT = [
    {"role": "system", "content": "Answer with one word."},
    {"role": "user", "content": "The capital of France is"},
]
GENERATED_RGB = (0xD5, 0x5E, 0x00)  # --murano-generated, light theme
ROLE_RGB = {"template": (0x99, 0x99, 0x99), "system": (0xE6, 0x9F, 0x00), "user": (0x00, 0x72, 0xB2), "assistant": (0x00, 0x9E, 0x73)}  # fmt: skip


@pytest.fixture(scope="module")
def demo():
    from murano_widgets import load_demo_model

    return load_demo_model()


@pytest.fixture(scope="module")
def generated(demo):
    from murano_widgets import show_logit_lens

    return show_logit_lens(demo, PROMPTS, generate=4).result


@pytest.fixture(scope="module")
def chat(demo):
    from murano_widgets import show_logit_lens

    tokenizer = demo.tokenizer
    kept = tokenizer.chat_template
    tokenizer.chat_template = TEMPLATE
    try:
        return show_logit_lens(demo, chat=CHAT, generate=3).result
    finally:
        tokenizer.chat_template = kept


def mount(browser, result, width=1200, dark=False, **options):
    from murano_widgets import LogitLensWidget

    context, page = new_page(browser, width=width + 40, height=1000)
    widget = LogitLensWidget(result, **options)
    return context, page, widget, Bridge(page, widget, width=width, dark=dark)


def column_left(bridge, position):
    """Client x of the left edge of the column showing ``position`` (scrolled into view), and
    its bottom cell's rectangle."""
    rect = bridge.page.evaluate("(j) => window.debug.cellClientRect(0, j)", position)
    layout = bridge.layout()
    left = rect["x"] - bridge.page.eval_on_selector(
        ".murano-canvas", "(c) => c.getBoundingClientRect().left"
    )
    if left < layout["labelW"] or left + rect["w"] > layout["width"]:
        bridge.page.eval_on_selector(
            ".murano-scroll", "(e, x) => { e.scrollLeft = x; }", left + layout["scrollLeft"] - 200
        )
        bridge.wait_frames()
        rect = bridge.page.evaluate("(j) => window.debug.cellClientRect(0, j)", position)
    return rect["x"], rect


def close(rgb, expected, tolerance=6):
    return all(abs(a - b) <= tolerance for a, b in zip(rgb[:3], expected, strict=True))


def input_texts(bridge):
    layout = bridge.layout()
    top, bottom = layout["inputY"], layout["inputY"] + layout["stripH"]
    # The strip's tokens, not its "input" label at the left.
    return [t for t in bridge.texts() if top <= t["y"] <= bottom and t["x"] > layout["labelW"]]


def axis_numbers(bridge):
    layout = bridge.layout()
    return [
        int(t["text"])
        for t in bridge.texts()
        if abs(t["y"] - (layout["heatY"] - 4)) < 1 and t["text"].isdigit()
    ]


def test_boundary_rule_and_generated_tokens_look_different(browser, generated):
    context, page, _widget, bridge = mount(browser, generated)
    try:
        start = generated.generation_starts[0]
        x, rect = column_left(bridge, start)
        canvas = page.eval_on_selector(".murano-canvas", "(c) => c.getBoundingClientRect().top")
        layout = bridge.layout()
        # The rule crosses the cells and both token strips at the first generated column.
        for y in (
            rect["y"] + rect["h"] / 2,
            canvas + layout["inputY"] + 2,
            canvas + layout["predY"] + 3,
        ):
            assert close(bridge.pixel(x, y), GENERATED_RGB), (y, bridge.pixel(x, y))
        # No rule between two prompt columns.
        x_prompt, _ = column_left(bridge, start - 1)
        assert not close(bridge.pixel(x_prompt, rect["y"] + rect["h"] / 2), GENERATED_RGB)
        # Generated input tokens: italic, on a tint; the prompt's upright on the plain strip.
        texts = input_texts(bridge)
        assert len(texts) == generated.lengths[0]
        italic = [("italic" in t["font"]) for t in sorted(texts, key=lambda t: t["x"])]
        assert italic == [j >= start for j in range(generated.lengths[0])]
        strip_y = canvas + layout["inputY"] + 1
        tint = bridge.pixel(column_left(bridge, start + 1)[0] + 3, strip_y)
        plain = bridge.pixel(x_prompt + 3, strip_y)
        assert tint != plain and tint[0] > tint[2]  # a warm tint, not the grey strip
        assert page.is_visible(".murano-key-generated")
        assert not page.is_visible(".murano-role-keys")
        assert not page.is_visible(".murano-hide-template")
        bridge.screenshot("generation-light.png")
        assert page.errors == []
    finally:
        context.close()


def test_keyboard_readout_and_tooltip_say_generated(browser, generated):
    context, page, widget, bridge = mount(browser, generated)
    try:
        start = generated.generation_starts[0]
        page.focus(".murano-canvas")
        page.keyboard.press("Home")
        for _ in range(start):
            page.keyboard.press("ArrowRight")
        bridge.wait_frames()
        assert bridge.state()["focus"]["position"] == start
        readout = page.inner_text(".murano-readout")
        assert f"position {start}," in readout and "(generated)" in readout
        assert "generated" in page.inner_text(".murano-tooltip")
        page.keyboard.press("ArrowLeft")
        bridge.wait_frames()
        assert "generated" not in page.inner_text(".murano-readout")
        # Pinning from the keyboard: Python describes the pinned cell as generated or not.
        page.keyboard.press("Enter")
        bridge.sync()
        assert widget.selected["position"] == start - 1
        assert widget.selected["generated"] is False
        assert page.errors == []
    finally:
        context.close()


@pytest.mark.parametrize("dark", [False, True])
def test_role_bands_and_legend(browser, chat, dark):
    context, page, _widget, bridge = mount(browser, chat, dark=dark)
    try:
        roles = chat.token_roles[0]
        assert {"template", "system", "user", "assistant"} <= set(roles)
        canvas = page.eval_on_selector(".murano-canvas", "(c) => c.getBoundingClientRect().top")
        layout = bridge.layout()
        band_y = canvas + layout["inputY"] + layout["stripH"] - 1.5
        for role, rgb in ROLE_RGB.items():
            position = roles.index(role)
            x, rect = column_left(bridge, position)
            assert close(bridge.pixel(x + rect["w"] / 2, band_y), rgb), (role, position)
        keys = page.eval_on_selector_all(
            ".murano-role-keys .murano-key-role", "els => els.map((e) => e.dataset.role)"
        )
        assert keys == ["template", "system", "user", "assistant"]
        assert page.is_visible(".murano-hide-template")
        # Generated assistant tokens: role band and the generation rule.
        start = chat.generation_starts[0]
        assert roles[start:] == ["assistant"] * (len(roles) - start)
        bridge.screenshot(f"chat-roles-{'dark' if dark else 'light'}.png")
        assert page.errors == []
    finally:
        context.close()


def test_hiding_template_tokens_keeps_true_positions(browser, chat):
    context, page, widget, bridge = mount(browser, chat)
    try:
        roles = chat.token_roles[0]
        shown = [j for j, role in enumerate(roles) if role != "template"]
        hidden = [j for j, role in enumerate(roles) if role == "template"]
        page.eval_on_selector(".murano-scroll", "(e) => { e.scrollLeft = 0; }")
        bridge.wait_frames()
        assert axis_numbers(bridge)[:3] == [0, 1, 2]
        page.click(".murano-hide-template")
        bridge.wait_frames()
        assert bridge.state()["hideTemplate"] is True
        assert bridge.layout()["nPositions"] == len(shown)
        # The axis numbers the true positions of the columns left (every one, or every k-th).
        numbers = axis_numbers(bridge)
        assert numbers and set(numbers) <= set(shown) and numbers[0] == shown[0]
        assert bridge.page.evaluate("(j) => window.debug.cellClientRect(0, j)", hidden[0]) is None
        # The input tokens drawn are the visible columns', none of them the template's.
        texts = input_texts(bridge)
        first, last = bridge.debug("visibleColumns")
        assert len(texts) == last - first
        assert not any("endoftext" in t["text"] for t in texts)
        # A click pins the true position.
        target = shown[2]
        x, y = bridge.cell_center(1, target)
        page.mouse.click(x, y)
        bridge.sync()
        assert widget.selected["position"] == target
        assert widget.selected["role"] == roles[target] != "template"
        # The keyboard steps over hidden tokens.
        page.focus(".murano-canvas")
        page.keyboard.press("Home")
        bridge.wait_frames()
        assert bridge.state()["focus"]["position"] == shown[0]
        page.keyboard.press("ArrowRight")
        bridge.wait_frames()
        assert bridge.state()["focus"]["position"] == shown[1]
        page.keyboard.press("End")
        bridge.wait_frames()
        assert bridge.state()["focus"]["position"] == shown[-1]
        assert "(generated, assistant)" in page.inner_text(".murano-readout")
        bridge.screenshot("chat-template-hidden.png")
        # Shown again: every position is back, the focus where it was.
        page.click(".murano-hide-template")
        bridge.wait_frames()
        assert bridge.layout()["nPositions"] == len(roles)
        assert bridge.state()["focus"]["position"] == shown[-1]
        assert page.errors == []
    finally:
        context.close()


def test_hide_template_trait_mounts_syncs_both_ways_and_exports(browser, chat, tmp_path):
    """The "hide chat-template tokens" box is the ``hide_template`` trait: read at mount, sent
    to Python when toggled, followed when Python sets it, and kept by the HTML export."""
    roles = chat.token_roles[0]
    shown = [j for j, role in enumerate(roles) if role != "template"]
    hidden = [j for j, role in enumerate(roles) if role == "template"]
    assert shown and hidden
    box = ".murano-hide-template-box"
    context, page, widget, bridge = mount(browser, chat, hide_template=True)
    try:
        # Mounted hidden: only the non-template columns, the box ticked, nothing sent.
        assert bridge.state()["hideTemplate"] is True and page.is_checked(box)
        assert bridge.layout()["nPositions"] == len(shown)
        assert bridge.page.evaluate("(j) => window.debug.cellClientRect(0, j)", hidden[0]) is None
        assert not any("endoftext" in t["text"] for t in input_texts(bridge))
        # The prompt's text above the heatmap reads as the shown tokens do: no template.
        shown_text = "".join(chat.input_words[0][p] for p in chat.positions(0)[shown].tolist())
        prompt_text = page.text_content(".murano-prompt-text")
        assert "endoftext" not in prompt_text and "endoftext" in chat.prompts[0]
        assert prompt_text == display_token(shown_text, spaces=False)
        assert bridge.sent() == []
        bridge.screenshot("chat-hide-template-trait.png")
        # The user unticks the box: Python hears it.
        page.click(".murano-hide-template")
        bridge.wait_frames()
        assert bridge.layout()["nPositions"] == len(roles)
        assert "endoftext" in page.text_content(".murano-prompt-text")
        assert bridge.sync() == [{"hide_template": False}]
        assert widget.hide_template is False
        page.click(".murano-hide-template")
        bridge.wait_frames()
        assert bridge.sync() == [{"hide_template": True}]
        assert widget.hide_template is True
        # Python sets it: the columns and the box follow, and nothing is sent back.
        widget.hide_template = False
        bridge.kernel_set("hide_template")
        bridge.wait_frames()
        assert bridge.layout()["nPositions"] == len(roles) and not page.is_checked(box)
        widget.hide_template = True
        bridge.kernel_set("hide_template")
        bridge.wait_frames()
        assert bridge.layout()["nPositions"] == len(shown) and page.is_checked(box)
        assert bridge.state()["hideTemplate"] is True
        assert bridge.sent() == []
        assert page.errors == []
    finally:
        context.close()

    # The exported page, opened from file:// with every other request refused, starts hidden.
    path = widget.save_html(tmp_path / "chat.html")
    context = browser.new_context(viewport={"width": 1240, "height": 1000}, device_scale_factor=1)
    try:
        page = context.new_page()
        errors, refused = [], []
        page.on("pageerror", lambda error: errors.append(str(error)))

        def refuse(route):
            refused.append(route.request.url)
            route.abort()

        page.route(lambda url: not url.startswith("file://"), refuse)
        page.goto(path.as_uri())
        page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")
        debug = "document.getElementById('murano-root').__muranoDebug"
        assert page.evaluate(f"() => {debug}.state.hideTemplate") is True
        assert page.evaluate(f"() => {debug}.layout.nPositions") == len(shown)
        assert page.is_checked(box)
        assert page.evaluate("() => window.muranoWidget.model.get('hide_template')") is True
        page.locator(".murano-root").screenshot(
            path=str(ARTIFACTS / "chat-hide-template-export.png")
        )
        assert errors == [] and refused == []
    finally:
        context.close()
