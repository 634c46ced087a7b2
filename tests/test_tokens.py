"""The token display rules: every case of tests/token_display_cases.json, against tokens.py.

The same file is run by ``node --test`` against the front end (js/tests/tokens.test.mjs), so the
static plot, the CLI and the widget show every token the same way.
"""

from __future__ import annotations

import json
import re
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


# ---------------------------------------------------------------------------------------------
# A character split across tokens: its bytes, and the whole character put back together

SPLIT = json.loads(
    (Path(__file__).parent / "split_character_cases.json").read_text(encoding="utf-8")
)


def test_bytes_text_writes_each_byte_of_a_split_character():
    from murano_widgets.tokens import bytes_text

    assert bytes_text(" 日".encode()) == " 日"  # whole characters stay text
    assert bytes_text("日".encode()[:2]) == "<0xE6><0x97>"
    assert bytes_text(b"\xa5x") == "<0xA5>x"
    assert bytes_text("é".encode() + "日".encode()[:1]) == "é<0xE6>"


def _whole_characters(prompt: str, pieces: list[bytes]) -> list[dict | None]:
    """For each token holding part of a character: the characters of ``prompt`` whose UTF-8
    bytes overlap the token's own part-character bytes, from the prompt's own character
    boundaries (not from the code under test)."""
    spans, at = [], 0
    for char in prompt:  # each character's byte span in the prompt's UTF-8
        size = len(char.encode())
        spans.append((at, at + size, char))
        at += size
    starts, at = [], 0
    for piece in pieces:
        starts.append(at)
        at += len(piece)
    found: list[dict | None] = []
    for start, piece in zip(starts, pieces, strict=True):
        end = start + len(piece)
        split = [s for s in spans if s[0] < end and s[1] > start and (s[0] < start or s[1] > end)]
        if not split:
            found.append(None)
            continue
        lo, hi = split[0][0], split[-1][1]
        owners = [p for p, s in enumerate(starts) if s < hi and s + len(pieces[p]) > lo]
        data = prompt.encode()[lo:hi]
        found.append(
            {
                "text": "".join(s[2] for s in split),
                "bytes": " ".join(f"{b:02X}" for b in data),
                "from": owners[0],
                "to": owners[-1],
            }
        )
    return found


def test_split_characters_are_kept_as_bytes_by_the_step(tiny_model_dirs):
    """The tiny byte-level BPE tokenizer splits "日本" and "é" into byte tokens: the step
    decodes each to its bytes ("<0xE6>"), not "\\ufffd"; read back, the bytes are the prompt's.
    The file node reads (js/tests/tokens.test.mjs) is what this writes."""
    import torch

    from murano_widgets import MuranoModel
    from murano_widgets.step.token_strings import decode_unique

    tokenizer = MuranoModel(tiny_model_dirs["gpt2"]).tokenizer
    ids = tokenizer(SPLIT["prompt"])["input_ids"]
    decoded = decode_unique(tokenizer, [torch.tensor(ids)])
    tokens = [decoded[i] for i in ids]
    assert tokens == SPLIT["tokens"]
    assert not any("\ufffd" in token for token in tokens)
    pieces = [
        b"".join(
            bytes([int(part[3:5], 16)]) if part.startswith("<0x") else part.encode()
            for part in re.split(r"(<0x[0-9A-F]{2}>)", token)
            if part
        )
        for token in tokens
    ]
    assert b"".join(pieces) == SPLIT["prompt"].encode()
    assert _whole_characters(SPLIT["prompt"], pieces) == SPLIT["whole"]
    assert sum(whole is not None for whole in SPLIT["whole"]) >= 8


def test_the_widget_payload_carries_the_bytes(load_tiny):
    from murano_widgets import LogitLensWidget
    from murano_widgets.run import run_logit_lens

    widget = LogitLensWidget(run_logit_lens(load_tiny("gpt2"), SPLIT["prompt"]))
    table = widget._meta["tokens"]
    assert {"<0xE6>", "<0x97>", "<0xA5>"} <= set(table) and "\ufffd" not in table
