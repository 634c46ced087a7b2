"""Token text made visible: spaces, newlines and invisible characters as marks.

One rule set, the same character for character as the front end's ``displayToken``
(``js/src/shared/tokens.js``); both run every case of ``tests/token_display_cases.json``. The rules are an
explicit list of code points, not Unicode categories (Python's ``unicodedata`` and the browser's
tables differ between versions):

- every space ``" "`` → ``"␣"`` (``spaces=False`` keeps spaces, for whole prompts);
- ``"\\n"`` → ``"↵"``, ``"\\t"`` → ``"⇥"``, ``"\\r"`` → ``"⇤"`` (back to the line start);
- controls, invisible and format characters, unusual spaces, bidirectional controls, private-use
  and tag characters and lone surrogates → ``"<U+XXXX>"`` (the ranges below);
- the empty string → ``"∅"``.

A token that holds part of a multi-byte UTF-8 character (byte-level BPE splits "日" into up
to three tokens) decodes to ``"\ufffd"``, which says nothing. The step keeps such a token's bytes
instead, each byte the character lacks written ``"<0xE6>"`` (:func:`bytes_text`; the name
SentencePiece gives its byte tokens), so that the widget can show them as bytes and put the
whole character together from the tokens around them.
"""

from __future__ import annotations

__all__ = ["bytes_text", "display_token", "quote_token"]

import re
from typing import Any

_MARKS = {"\n": "↵", "\t": "⇥", "\r": "⇤"}

# Inclusive code point ranges shown as <U+XXXX>. The same list stands in js/src/shared/tokens.js
# (CODE_POINT_RANGES): change them together.
_SHOWN_AS_CODE_POINT: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F),  # C0 controls (tab, newline and carriage return have marks instead)
    (0x007F, 0x009F),  # DEL and the C1 controls
    (0x00A0, 0x00A0),  # no-break space
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul fillers
    (0x1680, 0x1680),  # Ogham space mark
    (0x17B4, 0x17B5),  # Khmer inherent vowels (invisible)
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x2000, 0x200F),  # en quad … hair space, zero-width space/non-joiner/joiner, LRM, RLM
    (0x2028, 0x202F),  # line/paragraph separators, LRE … RLO embeddings, narrow no-break space
    (0x205F, 0x206F),  # medium math space, word joiner, invisible operators, isolates
    (0x3000, 0x3000),  # ideographic space
    (0x3164, 0x3164),  # Hangul filler
    (0xD800, 0xDFFF),  # surrogates (a Python str holds them only as lone halves)
    (0xE000, 0xF8FF),  # private use
    (0xFEFF, 0xFEFF),  # zero-width no-break space (byte order mark)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF9, 0xFFFB),  # interlinear annotation controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE007F),  # tag characters
    (0xF0000, 0x10FFFF),  # supplementary private use areas A and B (planes 15 and 16)
)


def _shown_as_code_point(cp: int) -> bool:
    for lo, hi in _SHOWN_AS_CODE_POINT:
        if cp < lo:
            return False
        if cp <= hi:
            return True
    return False


def display_token(token: str, spaces: bool = True) -> str:
    """A token as visible, safe text: ``" Paris"`` → ``"␣Paris"``, ``"\\n"`` → ``"↵"``.

    Args:
        token: The token's text (untrusted; the result is plain text, never markup).
        spaces: Show every space as ``"␣"`` (the default, for tokens); ``False`` keeps spaces
            as spaces (for whole prompts). Every other rule applies either way.

    Returns:
        The text with marks: see the module's docstring for the rules. A value that is not a
        string is shown as ``"?"``.
    """
    if not isinstance(token, str):
        return "?"
    if token == "":
        return "∅"
    out = []
    for char in token:
        if char == " ":
            out.append("␣" if spaces else " ")
        elif char in _MARKS:
            out.append(_MARKS[char])
        elif _shown_as_code_point(ord(char)):
            out.append(f"<U+{ord(char):04X}>")
        else:
            out.append(char)
    return "".join(out)


def quote_token(token: str, spaces: bool = True, max_chars: int = 48) -> str:
    """A token (or a prompt) as a message quotes it: ``" Rome"`` → ``"“␣Rome”"``.

    The one form of a token in the widget's status lines and messages, the same as the front
    end's ``quoteToken`` (``js/src/shared/tokens.js``), so a line that Python words and one that the
    front end words read alike: :func:`display_token`'s text, cut to ``max_chars`` code points
    with a closing ``"…"``, in curly quotes.

    Args:
        token: The text (untrusted).
        spaces: As :func:`display_token`: ``False`` keeps spaces (for a whole prompt).
        max_chars: The most code points of the text shown, the ``"…"`` included.

    Returns:
        The quoted text.
    """
    shown = list(display_token(token, spaces=spaces))
    if len(shown) > max_chars:
        shown = [*shown[: max_chars - 1], "…"]
    return f"“{''.join(shown)}”"


# A byte of a character split across tokens, as the step writes it (SentencePiece's own form).
BYTE_MARK = re.compile(r"<0x([0-9A-F]{2})>")


def bytes_text(raw: bytes) -> str:
    """A token's bytes as text: UTF-8 where they form whole characters, ``"<0xE6>"`` for each
    byte of a character the token holds only part of.

    Args:
        raw: The token's bytes.

    Returns:
        The text, e.g. ``b" \xe6\x97"`` → ``" <0xE6><0x97>"``; ``b"\xa5x"`` → ``"<0xA5>x"``.
    """
    text = raw.decode("utf-8", errors="surrogateescape")
    return "".join(
        f"<0x{ord(char) - 0xDC00:02X}>" if 0xDC80 <= ord(char) <= 0xDCFF else char for char in text
    )


def token_bytes(tokenizer: Any, token_id: int) -> bytes | None:
    """A token's own bytes, where the tokenizer says them: a byte-level BPE token's characters
    (GPT-2's byte-to-character map), or a SentencePiece byte token (``"<0xE6>"``); ``None`` for
    any other tokenizer or token."""
    try:
        piece = tokenizer.convert_ids_to_tokens(int(token_id))
    except Exception:  # a tokenizer without the method, or an id it does not know
        return None
    if not isinstance(piece, str):
        return None
    found = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", piece)
    if found:
        return bytes([int(found[1], 16)])
    decoder = _byte_decoder()
    if piece and all(char in decoder for char in piece):
        return bytes(decoder[char] for char in piece)
    return None


_BYTE_DECODER: dict[str, int] = {}


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet backwards: each printable stand-in character to its byte."""
    if not _BYTE_DECODER:
        # GPT-2's map (transformers has moved its bytes_to_unicode between modules): the
        # printable Latin-1 bytes stand for themselves, the other 68 bytes for U+0100 upwards.
        kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
        moved = [byte for byte in range(256) if byte not in kept]
        _BYTE_DECODER.update({chr(byte): byte for byte in kept})
        _BYTE_DECODER.update({chr(0x100 + n): byte for n, byte in enumerate(moved)})
    return _BYTE_DECODER
