"""Issue 47, item 6: a character split across tokens shows as its bytes in the input row, set
apart (muted italics), and the tooltip puts the whole character together, where it used to show
"\ufffd" with no hint. Screenshots, light and dark, in tests/_artifacts/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from murano_widgets import LogitLensWidget
from murano_widgets.run import run_logit_lens

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "_artifacts"
SPLIT = json.loads((ROOT / "tests" / "split_character_cases.json").read_text(encoding="utf-8"))
FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


@pytest.fixture(scope="module")
def split_widget(load_tiny):
    return LogitLensWidget(run_logit_lens(load_tiny("gpt2"), SPLIT["prompt"]))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_split_character_shows_its_bytes_and_the_whole_character(
    offline_page, split_widget, tmp_path, scheme
):
    page = offline_page
    page.set_viewport_size({"width": 1900, "height": 760})
    page.emulate_media(color_scheme=scheme)
    path = tmp_path / "split.html"
    split_widget.save_html(path)
    page.goto(path.as_uri())
    page.wait_for_selector(".murano-canvas")
    page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")
    page.evaluate(FRAMES)
    for byte in ("<0x97>", "<0xA9>"):  # the middle byte of 日, then the last of é
        position = SPLIT["tokens"].index(byte)
        whole = SPLIT["whole"][position]
        rect = page.evaluate(
            "(p) => document.getElementById('murano-root').__muranoDebug.cellClientRect(2, p)",
            position,
        )
        page.mouse.move(rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2)
        page.wait_for_function(
            "(b) => (document.querySelector('.murano-tooltip')?.innerText || '').includes(b)",
            arg=byte,
        )
        tip = page.inner_text(".murano-tooltip")
        assert "\ufffd" not in tip, tip
        assert f"{whole['text']} = {whole['bytes']}" in tip, tip
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"split_characters_{scheme}.png"))
    assert not page.errors
