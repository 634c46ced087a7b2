"""A word's token group, for the exercise's reference.

A word's group is the set of token ids whose text is a prefix of the word, with or without its
leading space (" Paris", " Par", " P", "Paris", "Pa", ...; a token of white space alone is
not in it): every token with which the model could start writing the word.

Note for later: ``murano_widgets/groups.py`` (``TokenGroup``, on another branch) builds groups
for the package's metrics; once it lands, this private helper should become a call to it, with
``tests/test_exercises.py``'s own independent group kept as the check.
"""

from __future__ import annotations

from typing import Any

__all__ = ["word_group"]


def word_group(tokenizer: Any, word: str) -> list[int]:
    """The ids of ``word``'s group, ascending (see the module's docstring).

    Raises:
        ValueError: If no token of the vocabulary starts the word.
    """
    stripped = word.strip()
    forms = {stripped, " " + stripped}
    texts = tokenizer.batch_decode([[index] for index in range(len(tokenizer))])
    ids = [
        index
        for index, text in enumerate(texts)
        if text.strip() and any(form.startswith(text) for form in forms)
    ]
    if not ids:
        raise ValueError(f"no token of the vocabulary starts the word {word!r}")
    return ids
