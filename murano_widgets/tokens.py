"""Token text made visible: spaces, newlines and invisible characters as marks.

The same rules as the front end's ``displayToken`` (js/logit_lens.js), for static plots and
text summaries.
"""

from __future__ import annotations

import unicodedata

_MARKS = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def display_token(token: str) -> str:
    """A token as visible text: ``" Paris"`` → ``"␣Paris"``, ``"\\n"`` → ``"↵"``.

    Leading and trailing spaces, newlines and tabs get marks; control, format (e.g. the
    right-to-left mark) and other invisible characters are written as ``<U+200F>``. An empty
    token is shown as ``∅``.
    """
    if token == "":
        return "∅"
    out = []
    for index, char in enumerate(token):
        if char == " " and 0 < index < len(token) - 1 and token[index - 1] != " ":
            out.append(" ")  # a space inside a word piece stays a space
        elif char in _MARKS:
            out.append(_MARKS[char])
        elif unicodedata.category(char) in {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"} or (
            unicodedata.category(char) == "Zs" and char != " "
        ):
            out.append(f"<U+{ord(char):04X}>")
        else:
            out.append(char)
    return "".join(out)
