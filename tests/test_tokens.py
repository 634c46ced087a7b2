"""The token display rules: every case of tests/token_display_cases.json, against tokens.py.

The same file is run by ``node --test`` against the front end (js/tests/tokens.test.mjs), so the
static plot, the CLI and the widget show every token the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from murano_widgets.tokens import display_token

CASES = json.loads((Path(__file__).parent / "token_display_cases.json").read_text(encoding="utf-8"))


def test_the_table_covers_what_it_must():
    texts = [case["text"] for case in CASES]
    assert len(CASES) >= 40
    assert all(set(case) <= {"text", "shown", "why", "spaces"} and case["why"] for case in CASES)
    joined = "".join(texts)
    for char in [" ", "\n", "\t", "\r", "\ufffd", "\ue000", "\uf8ff", "\U000f0000", "\u200b",
                 "\u200d", "\u2060", "\ufeff", "\u200f", "\u202e", "\u2066", "\u061c", "\u00a0",
                 "\u0000", "\u0085", "\U000e0041", "\U0001f600"]:  # fmt: skip
        assert char in joined, f"no case has U+{ord(char):04X}"
    assert "" in texts
    assert any(len(t) == 1 and 0xD800 <= ord(t) <= 0xDFFF for t in texts), "a lone surrogate"


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['why'][:40]}" for i, c in enumerate(CASES)])
def test_display_token_case(case):
    spaces = case.get("spaces", True)
    assert display_token(case["text"], spaces=spaces) == case["shown"], case["why"]


def test_display_token_keeps_its_signature():
    assert display_token(" a b") == "␣a␣b"
    assert display_token(" a b", False) == " a b"
    assert display_token(None) == "?"  # type: ignore[arg-type]


def test_every_mark_is_in_matplotlibs_default_font():
    """A static plot draws token labels in matplotlib's default font (DejaVu Sans): a mark that
    font lacks comes out as an empty box (the carriage return's old "␍" did)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    font = FT2Font(font_manager.findfont(font_manager.FontProperties()))
    has = set(font.get_charmap())
    # Every character the rules themselves write, whatever the input.
    written = {display_token(case["text"]) for case in CASES} | {display_token("\u0007 \r\n\t")}
    marks = {char for text in written for char in text if ord(char) > 0x7E}
    marks -= {char for case in CASES for char in case["text"]}  # the tokens' own letters
    assert marks >= {"␣", "↵", "⇥", "⇤", "∅"}
    assert not {char for char in marks if ord(char) not in has}
