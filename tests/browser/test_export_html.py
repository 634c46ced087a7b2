"""The exported HTML page renders the full widget in Chromium with no kernel and no network."""

from __future__ import annotations

import pytest
from lens_data import HOSTILE_TOKENS, make_result

from murano_widgets import LogitLensWidget

pytestmark = pytest.mark.browser


@pytest.fixture
def exported(tmp_path):
    widget = LogitLensWidget(
        make_result(
            prompts=[HOSTILE_TOKENS, ["The", " Eiff", "el", " Tower"]],
            vocab=HOSTILE_TOKENS,
            n_layers=6,
        )
    )
    path = widget.save_html(tmp_path / "lens.html")
    return widget, path


def test_export_is_one_escaped_file(exported):
    widget, path = exported
    text = path.read_text(encoding="utf-8")
    assert text == widget.to_html()
    # Token text only appears escaped inside the JSON block: no markup from the data.
    assert "onerror" in text and "<img" not in text
    assert text.count("<script") == 2  # the JSON data block and the loader
    assert "http://" not in text and "https://" not in text
    assert "default-src 'none'" in text


def test_export_renders_offline_and_is_interactive(offline_page, exported):
    page = offline_page
    _, path = exported
    page.goto(path.as_uri())
    page.wait_for_selector(".murano-canvas")
    page.wait_for_function("() => window.muranoWidget && window.muranoWidget.model")
    # The heatmap is drawn: the canvas is not blank.
    colours = page.evaluate(
        """() => { const c = document.querySelector('.murano-canvas');
           const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
           const seen = new Set(); for (let i = 0; i < d.length; i += 4 * 97) seen.add(d[i] << 16 | d[i+1] << 8 | d[i+2]);
           return seen.size; }"""
    )
    assert colours > 10
    # The chart's legend names the final prediction at the last position, with a value (no
    # "loading…": there is no kernel to load anything from).
    widget, _ = exported
    result = widget.result
    seq = int(result.positions(0)[-1])
    final = result.token_strings[int(result.final_tokens[0, seq])]
    item = '.murano-traj-item[data-series="final"]'
    assert "loading" not in page.inner_text(item).lower()
    assert page.inner_text(f"{item} .murano-traj-token") == final.replace(" ", "␣")
    assert page.inner_text(f"{item} .murano-traj-value").endswith("%")
    # Sliders move with the keyboard, and the metric switch works without a kernel.
    page.focus(".murano-layer-control .murano-slider")
    page.keyboard.press("Home")
    assert page.evaluate("() => window.muranoWidget.model.get('layer')") == 0
    assert page.inner_text(".murano-layer-control .murano-value") == "L0"
    page.focus(".murano-prompt-control .murano-slider")
    page.keyboard.press("End")
    assert page.evaluate("() => window.muranoWidget.model.get('prompt')") == 1
    assert page.text_content(".murano-prompt-text") == "The Eiffel Tower"
    page.keyboard.press("Home")
    page.select_option("select", "kl")
    assert page.evaluate("() => window.muranoWidget.model.get('metric')") == "kl"
    # Hostile tokens are text, and nothing ran or was fetched.
    prompt_text = page.inner_text(".murano-prompt-text")
    assert "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>" in prompt_text
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.__pwned") is None
    assert page.evaluate("() => document.querySelectorAll('img').length") == 0
    assert page.refused == []
    assert not page.errors
