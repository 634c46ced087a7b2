"""Token ids decoded to the strings a result carries: each distinct id once per tokenizer, kept.

The cache is module state: it pickles empty, since a remote trace sends the package's code to
NDIF by value with the globals it names.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch

from murano_widgets.tokens import bytes_text, token_bytes


class _TokenStrings(weakref.WeakKeyDictionary):
    """Each tokenizer's decoded ids, kept across calls (a token id decodes alone to the same
    text every time; at most one string per id of the vocabulary). Keyed weakly by the
    tokenizer, with the Rust tokenizer it came from: swapping that starts afresh.

    It pickles as an empty cache: a remote trace sends this module's code to NDIF by value
    (``register("murano_widgets")``), and cloudpickle takes the globals the code names along,
    where a weak reference cannot go."""

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (type(self), ())


_TOKEN_STRINGS: _TokenStrings = _TokenStrings()


def decode_unique(tokenizer: Any, id_tensors: list[torch.Tensor]) -> dict[int, str]:
    """Each distinct token id decoded, in ascending id order. An id is decoded once per
    tokenizer, then kept, and alone: the Rust tokenizer's batch decode runs on its thread
    pool, which on two busy cores took 2.6 ms a call of 200 ids that take 0.1 ms to decode
    (and transformers' batch_decode adds a Python conversion per id around it)."""
    ids = torch.unique(torch.cat([t.reshape(-1) for t in id_tensors]))
    ids = ids[ids >= 0].tolist()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    known = _known_strings(tokenizer, backend)
    missing = [i for i in ids if i not in known]
    if missing and backend is not None:
        known.update({i: backend.decode([i], skip_special_tokens=False) for i in missing})
    elif missing:
        words = tokenizer.batch_decode([[i] for i in missing], clean_up_tokenization_spaces=False)
        known.update(zip(missing, words, strict=True))
    for i in missing:
        known[i] = _partial_as_bytes(tokenizer, i, known[i])
    return {i: known[i] for i in ids}


def _partial_as_bytes(tokenizer: Any, token_id: int, text: str) -> str:
    """A token that decodes to "\ufffd" because it holds part of a character: its bytes as
    ``bytes_text`` writes them (``"<0xE6><0x97>"``), when the tokenizer says its bytes and they
    are not valid UTF-8 on their own; else the decoded text as it is (a real "\ufffd" too)."""
    if "\ufffd" not in text:
        return text
    raw = token_bytes(tokenizer, token_id)
    if raw is None:
        return text
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return bytes_text(raw)
    return text


def _known_strings(tokenizer: Any, backend: Any) -> dict[int, str]:
    """The tokenizer's decoded ids so far (a fresh dict for one that cannot be kept)."""
    try:
        source, known = _TOKEN_STRINGS.get(tokenizer, (None, None))
        if known is None or source is not backend:
            known = {}
            _TOKEN_STRINGS[tokenizer] = (backend, known)
    except TypeError:  # not weakly referenceable, or not hashable
        known = {}
    return known


def subset(table: dict[int, str], id_tensors: list[torch.Tensor]) -> dict[int, str]:
    """The entries of ``table`` for the distinct ids of ``id_tensors``, in ascending id order
    (as :func:`decode_unique` makes them: one lens's table among lenses side by side)."""
    ids = torch.unique(torch.cat([t.reshape(-1) for t in id_tensors]))
    return {i: table[i] for i in ids[ids >= 0].tolist()}


def words(ids: torch.Tensor, table: dict[int, str]) -> list:
    """Maps an id tensor to nested lists of decoded words ("" for -1) through the table."""
    keys = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
    values = np.array(["", *table.values()], dtype=object)
    order = np.argsort(keys)
    flat = ids.reshape(-1).numpy()
    where = np.searchsorted(keys[order], flat)
    where = np.where(flat >= 0, order[np.minimum(where, len(keys) - 1)] + 1, 0)
    return values[where].reshape(tuple(ids.shape)).tolist()
