"""Lenses side by side in the real front end: the lens menu and the ``lens_name`` trait both
ways, the header, the heatmap's text and the trajectory chart under each lens, the pinned cell
across a switch, and the exported page with no kernel.

The widget holds the demo model's logit and tuned lenses on two prompts with answers
(``LogitLens(model, lens={"logit": None, "tuned": tuned})``); what each lens shows is checked
against that lens's own result.
"""

from __future__ import annotations

import pytest
from harness import Bridge

from murano_widgets import LogitLens, LogitLensWidget, load_demo_model, load_demo_tuned_lens

pytestmark = pytest.mark.browser

PROMPTS = ["The capital of France is", "Monday, Tuesday,"]
ANSWERS = [" Paris", " Wednesday"]
LENS_MENU = ".murano-lens-select"


@pytest.fixture(scope="module")
def results():
    model = load_demo_model()
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(model)}
    return LogitLens(model, lens=lenses).run(PROMPTS, ANSWERS)


def row_words(bridge: Bridge, layer_index: int) -> list[str]:
    """The tokens the heatmap writes in one row (canvas text, in column order)."""
    layout = bridge.layout()
    r = bridge.page.evaluate("([i]) => window.debug.cellClientRect(i, 0)", [layer_index])
    canvas = bridge.page.evaluate(
        "() => document.querySelector('.murano-canvas').getBoundingClientRect().top"
    )
    y = r["y"] - canvas + r["h"] / 2
    texts = [t for t in bridge.texts() if abs(t["y"] - y) < 2 and t["x"] > layout["labelW"]]
    return [t["text"][1:-1] for t in sorted(texts, key=lambda t: t["x"])]


def expected_words(result, prompt: int, layer_index: int) -> list[str]:
    positions = result.positions(prompt).tolist()
    return [result.predicted_words[layer_index][prompt][s] for s in positions]


def test_the_lens_menu_switches_lenses_both_ways(page, results):
    widget = LogitLensWidget(results)
    bridge = Bridge(page, widget, width=1200)
    bridge.sync()  # answers ask for the detail sections at once: deliver them
    options = page.eval_on_selector_all(
        f"{LENS_MENU} option", "els => els.map(e => [e.value, e.textContent])"
    )
    assert options == [["logit", "Logit lens"], ["tuned", "Tuned lens"]]
    assert page.inner_text(".murano-title") == "Logit lens"
    assert bridge.state()["lenses"] == ["logit", "tuned"]
    # Row 1 of prompt 0 under each lens: the lenses predict differently there.
    logit_row = expected_words(results["logit"], 0, 1)
    tuned_row = expected_words(results["tuned"], 0, 1)
    assert logit_row != tuned_row
    shown = row_words(bridge, 1)
    assert [w.replace("␣", " ") for w in shown] == logit_row

    # The menu: the page switches at once and tells Python.
    page.select_option(LENS_MENU, "tuned")
    bridge.wait_frames()
    assert bridge.state()["lens"] == "tuned"
    assert page.inner_text(".murano-title") == "Tuned lens"
    assert [w.replace("␣", " ") for w in row_words(bridge, 1)] == tuned_row
    assert bridge.sync() == [{"lens": "tuned"}]
    assert widget.lens_name == "tuned"

    # Python: the page follows, and does not echo it back.
    widget.lens_name = "logit"
    bridge.kernel_set("lens")
    bridge.wait_frames()
    assert bridge.state()["lens"] == "logit"
    assert page.eval_on_selector(LENS_MENU, "e => e.value") == "logit"
    assert page.inner_text(".murano-title") == "Logit lens"
    assert bridge.sent() == []
    # A name the page does not know (a stale kernel) leaves the view where it is.
    page.evaluate("() => window.model.kernelSet('lens', 'jacobian')")
    bridge.wait_frames()
    assert bridge.state()["lens"] == "logit"


def test_the_chart_draws_the_answer_under_every_lens(page, results):
    widget = LogitLensWidget(results)
    bridge = Bridge(page, widget, width=1200)
    bridge.sync()  # answers ask for the detail sections: deliver them
    chart = bridge.debug("trajectory")
    assert chart["source"] == "last" and chart["prompt"] == 0
    by_key = {s["key"]: s for s in chart["series"]}
    assert {"answer:0", "lens:tuned"} <= set(by_key)
    other = by_key["lens:tuned"]
    assert other["label"] == "answer · Tuned lens" and other["shown"]
    assert other["token"] == " Paris" and other["segments"]
    expected = results["tuned"].answer_sets["answer"].probs[:, 0].tolist()
    for got, want in zip(other["values"], expected, strict=True):
        assert abs(got - want) <= 0.5 / 65535 + 1e-9
    own = results["logit"].answer_sets["answer"].probs[:, 0].tolist()
    for got, want in zip(by_key["answer:0"]["values"], own, strict=True):
        assert abs(got - want) <= 0.5 / 65535 + 1e-9
    legend = page.inner_text('.murano-traj-item[data-series="lens:tuned"]')
    assert "Tuned lens" in legend and "%" in legend
    # Under the tuned lens the other line is the logit lens's.
    page.select_option(LENS_MENU, "tuned")
    bridge.wait_frames()
    keys = [s["key"] for s in bridge.debug("trajectory")["series"]]
    assert "lens:logit" in keys and "lens:tuned" not in keys
    # The legend switches a lens's line off like any other.
    page.click('.murano-traj-item[data-series="lens:logit"]')
    bridge.wait_frames()
    line = next(s for s in bridge.debug("trajectory")["series"] if s["key"] == "lens:logit")
    assert not line["shown"]
    assert page.locator('.murano-traj-lines [data-series="lens:logit"]').count() == 0


def test_the_pinned_cell_stays_and_is_described_under_the_new_lens(page, results):
    widget = LogitLensWidget(results)
    bridge = Bridge(page, widget, width=1200)
    x, y = bridge.cell_center(1, 2)
    page.mouse.click(x, y)
    bridge.sync()
    assert widget.selected["lens"] == "logit"
    assert widget.selected["layer_index"] == 1 and widget.selected["position"] == 2
    page.select_option(LENS_MENU, "tuned")
    bridge.sync()
    tuned = results["tuned"].describe_cell(0, 1, 2)
    assert widget.selected == {**tuned, "lens": "tuned"}
    pin = page.inner_text(".murano-pin-text")
    assert tuned["predicted_token"].replace(" ", "␣") in pin
    assert bridge.state()["selected"]["layer_index"] == 1


def test_the_export_keeps_every_lens_and_its_menu_works_offline(offline_page, results, tmp_path):
    page = offline_page
    widget = LogitLensWidget(results, lens_name="tuned")
    path = widget.save_html(tmp_path / "lenses.html")
    page.goto(path.as_uri())
    page.wait_for_selector(".murano-canvas")
    page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")
    assert page.title() == "Logit lens · Tuned lens — toy-world"
    assert page.inner_text(".murano-title") == "Tuned lens"
    assert page.eval_on_selector(LENS_MENU, "e => e.value") == "tuned"
    page.select_option(LENS_MENU, "logit")
    assert page.evaluate("() => window.muranoWidget.model.get('lens')") == "logit"
    assert page.inner_text(".murano-title") == "Logit lens"
    item = '.murano-traj-item[data-series="lens:tuned"]'
    assert "loading" not in page.inner_text(item).lower()
    assert page.refused == []
    assert not page.errors


def test_screenshot_of_two_lenses(page, results):
    from harness import ARTIFACTS

    widget = LogitLensWidget(results)
    bridge = Bridge(page, widget, width=1200)
    bridge.sync()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    bridge.screenshot("lenses_side_by_side.png")
    assert (ARTIFACTS / "lenses_side_by_side.png").stat().st_size > 1000


LAB_SETUP = """\
from murano_widgets import LogitLens, LogitLensWidget, load_demo_model, load_demo_tuned_lens
m = load_demo_model()
lenses = {"logit": None, "tuned": load_demo_tuned_lens(m)}
w = LogitLensWidget(LogitLens(m, lens=lenses).run(["The capital of France is"]))
w"""


@pytest.mark.jupyterlab
@pytest.mark.slow
def test_the_lens_menu_reaches_the_kernel_in_jupyterlab(browser, jupyterlab):
    """In a real JupyterLab: the menu sets w.lens_name in the kernel, and the kernel's
    w.lens_name switches the page."""
    from lab_server import open_notebook

    name = jupyterlab.write_notebook(
        "lenses.ipynb",
        [
            LAB_SETUP,
            'print("LENS", w.lens_name)',
            'w.lens_name = "logit"; print("SET", w.lens_name)',
        ],
    )
    with open_notebook(browser, jupyterlab, name) as notebook:
        page = notebook.page
        notebook.run(0)
        page.wait_for_selector(LENS_MENU, timeout=120_000)
        assert page.inner_text(".murano-title") == "Logit lens"
        page.select_option(LENS_MENU, "tuned")
        assert page.inner_text(".murano-title") == "Tuned lens"
        page.wait_for_timeout(300)
        assert notebook.run_and_read(1, "LENS").strip() == "tuned"
        assert notebook.run_and_read(2, "SET").strip() == "logit"
        page.wait_for_function(
            "() => document.querySelector('.murano-title').textContent === 'Logit lens'"
        )
        assert page.eval_on_selector(LENS_MENU, "e => e.value") == "logit"
