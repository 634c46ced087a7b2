"""``murano_widgets.export``: the one self-contained, escaped page every widget saves, read here
as text (what a browser would parse before any script runs) through the lens diff, the widget
with the most sections. Every widget exporting through it: ``tests/test_widget_base.py``; the
pages drawing offline in Chromium: ``tests/browser/test_export_html.py``,
``test_diff_export_browser.py`` and ``test_dataset_browser.py``.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import re
from pathlib import Path

import pytest

from murano_widgets import load_demo_model, load_demo_tuned_lens
from murano_widgets.comparison.compare import compare_lenses
from murano_widgets.widgets.diff import LensDiffWidget, show_lens_diff

STATIC = Path(__file__).resolve().parents[1] / "murano_widgets" / "static"
# The demo tokenizer splits this into characters: tokens "<", "/", ">", "&", ...
PROMPTS = ["x</script><b>x</b> & y", "The cat is"]
# A whole token string that would close the data block and open a tag if it reached the page raw.
HOSTILE = '</script><b>x</b><img src=x onerror="window.__pwned=1">&amp;'
HOSTILE_LABELS = ("</title><script>alert(1)</script>", "b & <c>")
STATE_BLOCK = re.compile(
    r'<script type="application/json" id="murano-state">(.*?)</script>', re.DOTALL
)


@pytest.fixture(scope="module")
def comparison():
    """The demo model's logit lens against its tuned lens, with hostile labels and one token.

    The text of the token ``x`` is replaced by :data:`HOSTILE` in both results, so it reaches the
    payload's string table through the ordinary encoder.
    """
    model = load_demo_model()
    plain = compare_lenses(model, PROMPTS, lens_b=load_demo_tuned_lens(model))
    x = model.tokenizer.convert_tokens_to_ids("x")
    a = dataclasses.replace(plain.a, token_strings={**plain.a.token_strings, x: HOSTILE})
    b = dataclasses.replace(plain.b, token_strings={**plain.b.token_strings, x: HOSTILE})
    return dataclasses.replace(plain, a=a, b=b, labels=HOSTILE_LABELS)


def _state(page: str) -> dict:
    blocks = STATE_BLOCK.findall(page)
    assert len(blocks) == 1
    return json.loads(blocks[0])


def test_page_holds_the_diff_and_no_markup_from_the_data(comparison):
    widget = show_lens_diff(comparison)
    page = widget.to_html()
    # Only the template's two scripts (the data block and the loader) and their two ends.
    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<b>" not in page and "<img" not in page and 'onerror="' not in page
    assert "alert(1)</script>" not in page
    block = STATE_BLOCK.findall(page)[0]
    assert not set("<>&") & set(block)  # every such character of the data is a \\u escape
    # No network: a policy that forbids every fetch, and no address to fetch from.
    assert "default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'" in page
    assert "http://" not in page and "https://" not in page
    document = _state(page)
    # The escaped text decodes back to the exact strings: the hostile token and the prompt's
    # single-character tokens.
    tokens = document["state"]["_meta"]["tokens"]
    assert HOSTILE in tokens
    assert {"<", ">", "/", "&"} <= set(tokens)
    assert document["state"]["_meta"]["labels"] == list(HOSTILE_LABELS)
    assert document["state"]["_meta"]["prompts_a"] == PROMPTS
    # Every section, byte for byte, and the front end that draws them.
    sections = {
        name: base64.b64decode(text) for name, text in document["state"]["_sections"].items()
    }
    assert sections == {name: bytes(data) for name, data in widget._sections.items()}
    assert {"delta_prob", "kl_a_to_b", "aligned", "topk_tokens_a", "topk_tokens_b"} <= set(sections)
    esm = base64.b64decode(document["esm"]).decode("utf-8")
    assert esm == (STATIC / "lens_diff.js").read_text("utf-8")
    assert "renderStandalone" in esm
    assert (STATIC / "lens_diff.css").read_text("utf-8").splitlines()[-1] in page


def test_page_starts_where_the_widget_is(comparison):
    widget = LensDiffWidget(comparison, prompt=1, metric="kl")
    widget.selected = {"prompt": 1, "layer_index": 2, "position": 1}
    state = _state(widget.to_html())["state"]
    assert state["prompt"] == 1 and state["metric"] == "kl"
    assert state["selected"] == {"prompt": 1, "layer_index": 2, "position": 1}
    widget.selected = None
    widget.metric = "top1_differs"
    state = _state(widget.to_html())["state"]
    assert state["metric"] == "top1_differs" and state["selected"] is None


def test_title_defaults_to_the_two_labels_and_is_escaped(comparison):
    widget = show_lens_diff(comparison)
    page = widget.to_html()
    expected = (
        "Lens difference — &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; vs b &amp; &lt;c&gt;"
    )
    assert f"<title>{expected}</title>" in page
    assert (
        html.unescape(expected) == f"Lens difference — {HOSTILE_LABELS[0]} vs {HOSTILE_LABELS[1]}"
    )
    page = widget.to_html(title='a < b & "c"')
    assert "<title>a &lt; b &amp; &quot;c&quot;</title>" in page
    assert page.count("<title>") == 1


def test_save_html_writes_the_page_and_returns_its_path(comparison, tmp_path):
    widget = show_lens_diff(comparison)
    path = widget.save_html(tmp_path / "diff.html", title="Diff")
    assert path == tmp_path / "diff.html"
    assert path.read_text(encoding="utf-8") == widget.to_html(title="Diff")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diff.html"]
    # A string path works too.
    assert widget.save_html(str(tmp_path / "again.html")) == tmp_path / "again.html"


def test_save_html_refuses_a_folder_or_a_missing_folder_and_names_the_path(comparison, tmp_path):
    widget = show_lens_diff(comparison)
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match=re.escape(repr(str(folder)))):
        widget.save_html(folder)
    missing = tmp_path / "nowhere" / "diff.html"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        widget.save_html(missing)
    assert list(folder.iterdir()) == [] and not missing.parent.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_write_leaves_the_old_file_and_no_partial_one(comparison, tmp_path, monkeypatch):
    widget = show_lens_diff(comparison)
    path = tmp_path / "diff.html"
    path.write_text("the previous export", encoding="utf-8")
    write_text = Path.write_text

    def disk_full(self, data, *args, **kwargs):
        write_text(self, data[:100], *args, **kwargs)  # some bytes land, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", disk_full)
    with pytest.raises(OSError, match="No space left"):
        widget.save_html(path)
    monkeypatch.undo()
    assert path.read_text(encoding="utf-8") == "the previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diff.html"]
