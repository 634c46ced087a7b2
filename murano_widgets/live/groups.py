"""A live widget's token groups: a word typed in the widget becomes a group.

The front end's "group" action sends the word; :func:`add_word_group` builds
:meth:`TokenGroup.word(tokenizer, word) <murano_widgets.TokenGroup.word>` (Wendler et al.'s set:
every vocabulary token that is a prefix of the word, with and without its leading space) and
runs every prompt again with it among the session's groups, so that a prompt added later keeps
it. The word is the group's name: the widget's ``group`` trait, and the group menu's entry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from murano_widgets.groups import TokenGroup
from murano_widgets.results import lenses_of

if TYPE_CHECKING:
    from murano_widgets.live.session import LiveSession, Results

__all__ = ["add_word_group", "check_word"]


def check_word(word: Any) -> str:
    """A word to track as a group: a non-empty string, without surrounding spaces (the group
    holds the spaced forms already)."""
    if not isinstance(word, str) or not word.strip():
        raise ValueError(f"text must be a non-empty word to track as a group; got {word!r:.60}")
    return word.strip()


def add_word_group(session: LiveSession, results: Results, word: str) -> Results:
    """``results``' prompts run again with ``word``'s group added to the session's groups (the
    same results when it is a group already).

    Raises:
        ValueError: For an empty word, or one no vocabulary token is a prefix of (before any
            model work).
    """
    word = check_word(word)
    group = TokenGroup.word(session.model.tokenizer, word, spaces=True)
    before = session.step
    session.step = before.with_options(groups={**(before.groups or {}), word: group})
    try:
        return session.retarget(results, lenses_of(results).first.targets)
    except BaseException:
        session.step = before  # a failed run leaves the session's groups as they were
        raise
