"""Every widget in classic Notebook 6.5.7 with ipywidgets 7.7.1: the front end Colab's widget
manager speaks (Colab's own page cannot run here; classic Notebook is the ipywidgets 7 front end
that can). In headless Chromium, on the installed wheel:

* the heatmap, the lens diff and the data-set widget draw; each of their controls, focused, gets
  the key it is for, and what the keys changed reaches the kernel's traits;
* the live lens: a typed prompt gets its column, a tracked token its line, a patched cell its
  diff, and Python reads back what the page did;
* tqdm's progress bars (ipywidgets 7's own widgets) render: no "Cannot find model module";
* no widget writes a warning or an error to the browser console.
"""

from __future__ import annotations

import pytest
from classic_server import open_classic
from harness import ARTIFACTS
from lab_server import wait_for
from live_driver import add_prompt, hooked, wait_for_live_controls, wait_idle
from test_jupyterlab_widgets import (
    CELLS,
    CONTROL_STATE,
    CONTROLS,
    FOCUSABLE,
    IDENTITY,
    READ_BACK,
    READY,
    ROOTS,
    SETUP,
    _changed,
    _key_for,
    _widget_console,
)

pytestmark = [pytest.mark.colab, pytest.mark.slow]

SHOTS = ARTIFACTS / "colab"

# ipywidgets 7's progress bar (tqdm.auto in a kernel) and the package's own bars.
PROGRESS = """\
from tqdm.auto import tqdm
for _ in tqdm(range(3), desc="plain tqdm"):
    pass
table = lens_dataset(model, prompts, answers, progress=True)
print("BARS done")"""

# What ipywidgets 7's manager writes where a widget cannot be drawn.
BROKEN = ("Cannot find model module", "Error displaying widget", "Failed to load model class")


def _drawn(notebook, index: int, widget: str) -> None:
    notebook.run(index)
    notebook.output(index).locator(ROOTS[widget]).wait_for(timeout=120_000)
    notebook.page.wait_for_function(
        f"(sel) => {{ const r = document.querySelector(sel); return r && ({READY[widget]})(r); }}",
        arg=ROOTS[widget],
    )


def _no_broken_widget(notebook) -> None:
    text = notebook.page.locator("#notebook-container").inner_text()
    assert not [b for b in BROKEN if b in text], text[-3000:]


def test_every_widget_draws_and_its_controls_reach_python(browser, classic):
    cells = [SETUP, *CELLS.values(), PROGRESS, READ_BACK, READ_BACK]
    name = classic.write_notebook("widgets.ipynb", cells)
    read_before, read_after = len(CELLS) + 2, len(CELLS) + 3
    with open_classic(browser, classic, name) as notebook:
        page = notebook.page
        assert int(notebook.run_and_read(0, "READY", timeout=120)) >= 9
        for index, widget in enumerate(CELLS, start=1):
            _drawn(notebook, index, widget)
        bars = len(CELLS) + 1
        assert notebook.run_and_read(bars, "BARS", timeout=120) == "done"
        # tqdm's bar stays (leave=True); the package's bars close when done (leave=False), and
        # a model it cannot find would have left its error in the output.
        progress = notebook.output(bars).locator(".widget-hprogress")
        wait_for(lambda: progress.count() >= 1, 30, "tqdm's progress bar drawn")
        # (tqdm's widget writes figure spaces, U+2007, between its words)
        assert "plain tqdm: 100%" in " ".join(notebook.texts(bars)).replace("\u2007", " ")
        _no_broken_widget(notebook)

        before = notebook.read_json(read_before, "TRAITS")
        failures, checked = [], []
        for widget, root in ROOTS.items():
            controls = page.eval_on_selector(root, CONTROLS)
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
                state = page.evaluate(CONTROL_STATE, [root, control["who"]])
                key = _key_for(control, state)
                page.keyboard.press(key)
                page.wait_for_timeout(120)
                after = page.evaluate(CONTROL_STATE, [root, control["who"]])
                checked.append(f"{where}: {key}")
                if _changed(control, state, after) is False:
                    failures.append(f"{where}, {key}: did not act")
        assert not failures, "controls that did not act in classic Notebook:\n" + "\n".join(
            failures
        )
        page.wait_for_timeout(400)  # throttled syncs go out
        after = notebook.read_json(read_after, "TRAITS")
        for widget, names in {
            "heatmap": ("prompt", "layer", "metric", "n_prompts"),
            "diff": ("prompt", "metric"),
            "dataset": ("metric", "order"),
        }.items():
            for trait in names:
                assert after[widget][trait] != before[widget][trait], (
                    f"{widget}.{trait} stayed {before[widget][trait]!r} in the kernel"
                )
        SHOTS.mkdir(parents=True, exist_ok=True)
        for widget, root in ROOTS.items():
            page.locator(root).screenshot(path=str(SHOTS / f"classic-{widget}.png"))
        _no_broken_widget(notebook)
        assert not _widget_console(notebook.console), notebook.console
        print(f"{len(checked)} controls acted:\n" + "\n".join(checked))


# The model loads in a cell of its own: loaded in the widget's cell, classic Notebook's
# ipywidgets 7 renderer logged "Host is not attached." (a view it attached to an output element
# no longer in the page; the widget drew all the same). Colab's widget manager is not that
# renderer, and a notebook that loads its model first, as the teaching notebooks do, never
# showed it.
LIVE = """\
import json
from murano_widgets import load_demo_model, show_logit_lens
model = load_demo_model()
print("READY")"""

LIVE_SHOW = """\
w = show_logit_lens(model, "The capital of France is")
w"""

LIVE_READ = """\
print("STATE", json.dumps({"prompts": w.prompts, "targets": w.targets,
    "result_targets": w.result.targets, "patch": w.patched is not None}))"""


def test_the_live_lens_in_classic_notebook(browser, classic):
    name = classic.write_notebook("live.ipynb", [LIVE, LIVE_SHOW, LIVE_READ])
    with open_classic(browser, classic, name) as notebook:
        page = notebook.page
        assert notebook.run_and_read(0, "READY", timeout=120) == ""
        notebook.run(1)
        wait_for_live_controls(page)

        # A typed prompt: its column is drawn, and it is the prompt shown.
        add_prompt(page, "The capital of Japan is", new_index=1)
        # A tracked token: its chip, and its line on the trajectory chart.
        track = page.locator(".murano-live-track")
        track.fill(" Tokyo")
        track.press("Enter")
        page.wait_for_selector(".murano-chip:has-text('Tokyo')")
        page.wait_for_function(
            hooked("() => JSON.stringify($HOOK.trajectory).includes('Tokyo')"), timeout=60_000
        )
        # A patched cell: pin it, zero it, see the patched lens as a diff.
        rect = page.evaluate(hooked("() => $HOOK.cellClientRect(1, 3)"))
        page.mouse.click(rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2)
        page.locator(".murano-patch-source").select_option("zero")
        page.locator(".murano-patch-run").click()
        page.wait_for_selector(".murano-patch-diff", state="visible", timeout=60_000)
        assert "zero" in page.locator(".murano-patch-title").inner_text().lower()
        wait_idle(page)
        assert page.locator(".murano-live-error").is_hidden()

        state = notebook.read_json(2, "STATE")
        assert state["prompts"] == ["The capital of France is", "The capital of Japan is"], state
        assert state["targets"] == [" Tokyo"] and " Tokyo" in state["result_targets"], state
        assert state["patch"], state
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(".murano-root").first.screenshot(path=str(SHOTS / "classic-live.png"))
        _no_broken_widget(notebook)
        assert not _widget_console(notebook.console), notebook.console
