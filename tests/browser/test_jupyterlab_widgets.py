"""The three widgets in a real JupyterLab with a kernel, as a user meets them in the first hour.

One notebook on the shipped demo model shows the heatmap (``show_logit_lens``, a prompt of 20
tokens and a short one), the lens diff (``show_lens_diff`` of the logit against the tuned lens)
and the data set (``lens_dataset(...).show()``). Then:

* **keys**: every focusable control of every widget, focused, gets the key it is for (a slider's
  arrow, a menu's arrow, a button's Enter, a grid's arrow). JupyterLab's command mode binds the
  same keys to moving between cells and editing them; the control must act, keep the focus, and
  leave the notebook's active cell, mode and scroll where they were. The values reach the kernel.
* **themes**: JupyterLab Light, Dark and Dark High Contrast switched from its Settings menu, as a
  user does, with the widgets already drawn: each widget's screenshot goes to
  ``tests/_artifacts/jupyterlab/<widget>-<theme>.png`` and its pixels are checked as in
  ``test_themes_browser.py`` (background of the theme's lightness, no light block under a dark
  theme, every label at 4.5:1 over what is under it, on the canvases too);
* **first view**: the heatmap opens with the prompt's last position in view;
* **console**: no widget writes a warning or an error to the browser console (anywidget warns
  about a module that exports ``render`` by name).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from harness import ARTIFACTS
from lab_server import NotebookPage
from PIL import Image
from test_themes_browser import (
    CANVAS_TEXT_HOOK,
    CANVAS_TEXTS,
    DOM_TEXTS,
    MIN_CONTRAST,
    ROOT_BACKGROUND,
    _luminance,
    cells_box,
    light_block_fraction,
    low_contrast,
)

pytestmark = [pytest.mark.jupyterlab, pytest.mark.slow]

SHOTS = ARTIFACTS / "jupyterlab"

SETUP = """\
from murano_widgets import (compare_lenses, lens_dataset, load_demo_model, load_demo_tuned_lens,
                            show_lens_diff, show_logit_lens)
model = load_demo_model()
prompts = ["The Eiffel Tower is in the city of Paris, and the capital of Italy is",
           "Monday, Tuesday,", "The capital of France is", "Two plus three is"]
answers = [" Rome", " Wednesday", " Paris", " five"]
print("READY", len(model.tokenizer(prompts[0])["input_ids"]))"""

CELLS = {
    # Three prompts: the live "Remove prompt" button acts on the prompt the slider chose, and
    # two stay (the button stays enabled, and the slider's choice still shows in the kernel).
    "heatmap": "lens = show_logit_lens(model, prompts[:3], answers=answers[:3])\nlens",
    "diff": "diff = show_lens_diff(compare_lenses(model, prompts[:2], lens_b=load_demo_tuned_lens(model)))\ndiff",
    "dataset": "ds = lens_dataset(model, prompts, answers, progress=False).show()\nds",
}

READ_BACK = """\
import json
print("TRAITS", json.dumps({
    "heatmap": {"prompt": lens.prompt, "layer": lens.layer, "metric": lens.metric,
                "n_prompts": len(lens.prompts)},
    "diff": {"prompt": diff.prompt, "metric": diff.metric},
    "dataset": {"metric": ds.chart.metric, "layer": ds.chart.layer, "order": ds.chart.order},
}))"""

ROOTS = {"heatmap": ".murano-root", "diff": ".murano-diff", "dataset": ".murano-ds-root"}
# What each widget's drawing is ready on.
READY = {
    "heatmap": "(r) => { const d = r.parentElement.__muranoDebug; return d && d.frames > 0 && d.layout; }",
    "diff": "(r) => { const d = r.parentElement.__muranoDiffDebug; return d && d.layout; }",
    "dataset": "(r) => r.querySelectorAll('.murano-ds-line').length > 0",
}
DEBUG = {"heatmap": "__muranoDebug", "diff": "__muranoDiffDebug"}
SCROLLERS = {"heatmap": ".murano-scroll", "diff": ".murano-diff-scroller"}

# The focusable controls a person can reach with Tab, in a widget's root.
FOCUSABLE = "input, select, button, [tabindex]:not([tabindex='-1'])"

# Who an element is, across a redraw that makes it anew (the chart's legend entries are).
IDENTITY = "(e) => e ? [e.id, e.getAttribute('class'), e.dataset?.series ?? '', e.dataset?.mode ?? ''].join('|') : ''"

CONTROLS = f"""(root) => [...root.querySelectorAll({FOCUSABLE!r})].map((e, i) => {{
  const style = getComputedStyle(e);
  const box = e.getBoundingClientRect();
  const shown = !e.closest('[hidden]') && style.display !== 'none' && style.visibility === 'visible'
    && box.width > 0 && box.height > 0 && !e.disabled;
  return {{ who: ({IDENTITY})(e), tag: e.tagName.toLowerCase(), type: e.type || '', cls: e.getAttribute('class') || '',
           label: e.getAttribute('aria-label') || e.textContent.trim().slice(0, 30), shown }};
}}).filter((c) => c.shown)"""

# A control's state before and after a key, and who has the focus.
CONTROL_STATE = f"""([root, who]) => {{
  const e = [...document.querySelector(root).querySelectorAll({FOCUSABLE!r})].find((x) => ({IDENTITY})(x) === who);
  const options = e.tagName === 'SELECT' ? [...e.options].map((o) => !o.disabled) : [];
  const identity = {IDENTITY};
  return {{ value: e.value ?? null, selectedIndex: e.selectedIndex ?? null, options,
           pressed: e.getAttribute('aria-pressed'), checked: e.checked ?? null, mode: e.dataset?.mode ?? null,
           min: e.min ?? null, max: e.max ?? null, who: identity(e), focus: identity(document.activeElement) }};
}}"""


def _key_for(control: dict, state: dict) -> str:
    """The key a person presses on this control, in the direction it can still move."""
    if control["type"] == "range":
        return "ArrowRight" if float(state["value"]) < float(state["max"]) else "ArrowLeft"
    if control["tag"] == "select":
        enabled = state["options"]
        below = any(enabled[state["selectedIndex"] + 1 :])
        return "ArrowDown" if below else "ArrowUp"
    if control["tag"] == "button" or control["type"] == "checkbox":
        return "Enter" if control["tag"] == "button" else " "
    return "ArrowRight"


def _changed(control: dict, before: dict, after: dict) -> bool | None:
    """Whether the key did what it is for; None where the effect is not in the element."""
    if control["type"] == "range":
        return after["value"] != before["value"]
    if control["tag"] == "select":
        return after["selectedIndex"] != before["selectedIndex"]
    if before["pressed"] is not None:
        # A chosen option of a choice (the chart's Probability | Rank) stays chosen.
        if before["mode"] and before["pressed"] == "true":
            return None
        return after["pressed"] != before["pressed"]
    if control["type"] == "checkbox":
        return after["checked"] != before["checked"]
    return None


def _open_widgets(browser, jupyterlab, name: str, viewport=(1300, 1000)):
    """Opens a notebook with the three widgets, runs it, waits until each is drawn."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    # The canvases' strings with the pixels under them (the contrast check reads them).
    context.add_init_script(f"(() => {{ {CANVAS_TEXT_HOOK} }})();")
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.console_messages = []
    page.on(
        "console",
        lambda msg: (
            page.console_messages.append(f"{msg.type}: {msg.text}")
            if msg.type in ("warning", "error")
            else None
        ),
    )
    page.on("pageerror", lambda error: page.console_messages.append(f"pageerror: {error}"))
    jupyterlab.write_notebook(name, [SETUP, *CELLS.values(), READ_BACK, READ_BACK])
    notebook = NotebookPage(jupyterlab, page, name)
    ready = notebook.run_and_read(0, "READY", timeout=120)
    assert int(ready) >= 9, "the first prompt is long enough to need scrolling"
    for index, widget in enumerate(CELLS, start=1):
        notebook.run(index)
        root = notebook.output(index).locator(ROOTS[widget])
        root.wait_for(timeout=120_000)
        page.wait_for_function(
            f"(sel) => {{ const r = document.querySelector(sel); return r && ({READY[widget]})(r); }}",
            arg=ROOTS[widget],
        )
    return context, page, notebook


def _widget_console(messages: list[str]) -> list[str]:
    """The console lines that come from the widgets or their loader (anywidget)."""
    words = ("anywidget", "murano", "logit_lens", "lens_diff", "lens_dataset", "pageerror")
    return [m for m in messages if any(w in m.lower() for w in words)]


def test_every_control_keeps_its_keys_in_jupyterlab(browser, jupyterlab):
    context, page, notebook = _open_widgets(browser, jupyterlab, "keys.ipynb")
    read_before, read_after = len(CELLS) + 1, len(CELLS) + 2
    try:
        before_traits = json.loads(notebook.run_and_read(read_before, "TRAITS"))
        failures, checked = [], []
        for widget, root in ROOTS.items():
            controls = page.eval_on_selector(root, CONTROLS)
            kinds = {(c["tag"], c["type"]) for c in controls}
            assert len(controls) >= 3, f"{widget}: only {controls}"
            for control in controls:
                where = f"{widget} {control['tag']}.{control['cls']} ({control['label']!r})"
                there = page.evaluate(
                    f"([root, who]) => {{ const e = [...document.querySelector(root).querySelectorAll({FOCUSABLE!r})]"
                    f".find((x) => ({IDENTITY})(x) === who); e?.focus(); return Boolean(e); }}",
                    [root, control["who"]],
                )
                if not there:  # gone with an earlier key (a prompt list redrawn)
                    continue
                active, mode, scroll = (
                    notebook.active_cell(),
                    notebook.mode(),
                    notebook.scroll_top(),
                )
                before = page.evaluate(CONTROL_STATE, [root, control["who"]])
                key = _key_for(control, before)
                page.keyboard.press(key)
                page.wait_for_timeout(120)
                after = page.evaluate(CONTROL_STATE, [root, control["who"]])
                problems = []
                # The live widget's "Remove prompt" removes the prompt shown; with one prompt
                # left it is disabled and hands the focus to the prompt box (a disabled button
                # would drop it to the notebook): that is where the focus belongs, not lost.
                handed_on = "murano-live-remove" in before["who"] and "murano-live-prompt" in (
                    after["focus"] or ""
                )
                if after["focus"] != before["who"] and not handed_on:
                    problems.append(
                        f"lost the focus ({before['who']} -> {after['focus'] or 'nothing'})"
                    )
                if notebook.active_cell() != active:
                    problems.append(f"the active cell moved {active} -> {notebook.active_cell()}")
                if notebook.mode() != mode:
                    problems.append(f"the notebook went to {notebook.mode()} mode")
                if abs(notebook.scroll_top() - scroll) > 1:
                    problems.append("the notebook scrolled")
                if _changed(control, before, after) is False:
                    problems.append("did not act")
                checked.append(f"{where}: {key}")
                if problems:
                    failures.append(f"{where}, {key}: " + ", ".join(problems))
            assert ("input", "range") in kinds or widget == "dataset", f"{widget}: no slider"
        assert not failures, "controls that lost their keys to JupyterLab:\n" + "\n".join(failures)
        page.wait_for_timeout(400)  # throttled syncs go out
        after_traits = json.loads(notebook.run_and_read(read_after, "TRAITS"))
        # What the keys changed reached the kernel.
        for widget, names in {
            "heatmap": ("prompt", "layer", "metric", "n_prompts"),
            "diff": ("prompt", "metric"),
            "dataset": ("metric", "order"),
        }.items():
            for name in names:
                assert after_traits[widget][name] != before_traits[widget][name], (
                    f"{widget}.{name} stayed {before_traits[widget][name]!r} in the kernel"
                )
        assert not _widget_console(page.console_messages), page.console_messages
        print(f"{len(checked)} controls kept their keys:\n" + "\n".join(checked))
    finally:
        context.close()


def _root_background(page, root: str) -> list[float]:
    return page.eval_on_selector(root, ROOT_BACKGROUND)


THEMES = {
    "light": ("JupyterLab Light", False),
    "dark": ("JupyterLab Dark", True),
    "high-contrast": ("JupyterLab Dark High Contrast", True),
}


def test_every_widget_follows_jupyterlab_themes(browser, jupyterlab):
    context, page, notebook = _open_widgets(browser, jupyterlab, "themes.ipynb")
    SHOTS.mkdir(parents=True, exist_ok=True)
    failures = []
    try:
        # The first view: each heatmap's last position is in view without scrolling.
        for widget, scroller in SCROLLERS.items():
            visible = page.eval_on_selector(
                ROOTS[widget],
                """(r, [name, scroller]) => { const d = r.parentElement[name]; const n = d.layout.nPositions;
                     const c = d.cellClientRect(0, n - 1); const s = r.querySelector(scroller).getBoundingClientRect();
                     return [c.x >= s.left - 0.5 && c.x + c.w <= s.right + 0.5, n, c.x + c.w, s.right]; }""",
                [DEBUG[widget], scroller],
            )
            assert visible[0], (
                f"{widget}: the last of {visible[1]} positions is off to the right: {visible}"
            )
        for theme, (name, dark) in THEMES.items():
            if theme != "light":
                notebook.use_theme(name)
            for widget, root in ROOTS.items():
                locator = page.locator(root)
                locator.scroll_into_view_if_needed()
                page.wait_for_timeout(200)
                shot = SHOTS / f"{widget}-{theme}.png"
                locator.screenshot(path=str(shot))
                pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB"))
                origin = locator.bounding_box()
                bg = _root_background(page, root)
                where = f"{widget} under {name} (see {shot})"
                if dark:
                    if _luminance(bg) >= 0.05:
                        failures.append(f"{where}: a light background {bg}")
                    block = light_block_fraction(
                        pixels,
                        cells_box(page, root, DEBUG[widget], origin) if widget in DEBUG else None,
                    )
                    if block >= 0.002:
                        failures.append(f"{where}: {block:.1%} of it is a light block")
                elif _luminance(bg) <= 0.8:
                    failures.append(f"{where}: a dark background {bg}")
                dom = page.eval_on_selector(root, DOM_TEXTS)
                if widget in DEBUG:
                    # One fresh frame, scrolled to the start: the strings of earlier frames are
                    # not what is on screen, and a column half under the sticky layer labels is
                    # drawn clipped (the hook cannot see the clip, only the clear pixels there).
                    page.eval_on_selector(
                        root,
                        """(r, [name, scroller]) => { r.querySelector(scroller).scrollLeft = 0;
                             window.__texts.clear(); r.parentElement[name].drawNow(); }""",
                        [DEBUG[widget], SCROLLERS[widget]],
                    )
                canvas = page.eval_on_selector(root, CANVAS_TEXTS)
                assert dom, f"{where}: no text"
                if widget in DEBUG and not canvas:
                    failures.append(f"{where}: the canvas drew no labels since the theme changed")
                bad = low_contrast(dom, bg) + low_contrast(canvas, bg)
                if bad:
                    failures.append(
                        f"{where}: labels below {MIN_CONTRAST}:1:\n  " + "\n  ".join(bad[:10])
                    )
        assert not failures, "\n".join(failures)
        assert not _widget_console(page.console_messages), page.console_messages
    finally:
        context.close()
