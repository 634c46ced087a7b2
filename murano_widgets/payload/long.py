"""The payload of a long result: a string table that does not grow with cells x top-k.

Above :data:`LONG_PAYLOAD_CELLS` cells (rows x positions of the first lens; a 32-layer model
over 8,192 tokens and more), :meth:`~murano_widgets.payload.lens.LensPayload.from_result`
splits the string table in two:

- ``meta["tokens"]`` holds only the strings the base sections index (each position's input
  token and final prediction, each cell's top-1), so the state synced before any hover grows
  with the distinct top-1 tokens, not with cells x k;
- the strings only the top-k ranks 2..k hold follow them, as the detail section
  ``detail_tokens`` (their JSON list, UTF-8): it travels with the other detail sections (on the
  first hover live; inside an export's one file), and the front end appends it to the table.
  ``topk_tokens`` index the table and its continuation as one list.

Each token section then gets the narrowest index its own indices need: uint16 up to 65,535
strings (the top-1's stays 2 bytes a cell even when the top-k's strings push the whole table past
that), else 3 bytes, a uint16 section and a uint8 high plane (``name + "_high"``) that the front
end adds back, where one uint32 would cost 4. A shorter result is encoded as before, byte for byte (the golden payloads).

The top-k ranks 2..k (16 of a cell's 28 detail bytes, and every string they hold) are not part
of a long live widget's detail sections: ``meta["topk_window"]`` says so, and the front end asks
for the block of positions it shows a cell of (``{"action": "topk_window", "start": s}``),
answered by :func:`topk_window` with that block's top-k, its strings in a list of their own (so
the table synced never grows with them). An export holds every section, the top-k's and
``detail_tokens`` among them (:meth:`~murano_widgets.payload.lens.LensPayload.every_section`),
and stays one offline file.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from murano_widgets.metrics import SECTIONS
from murano_widgets.payload.codec import U16

__all__ = [
    "DETAIL_TOKENS",
    "HIGH",
    "LONG_PAYLOAD_CELLS",
    "TOPK_WINDOW",
    "WINDOWED",
    "base_token_ids",
    "detail_tokens_section",
    "is_long",
    "join_planes",
    "narrow_token_sections",
    "split_table",
    "topk_window",
]

#: Cells (rows x real positions of the first lens) above which the table is split: 32 layers
#: x 8,192 positions. Shorter results keep one table (their payloads stay byte-equal).
LONG_PAYLOAD_CELLS = 32 * 8192
#: The detail section holding the strings only the top-k ranks 2..k index.
DETAIL_TOKENS = "detail_tokens"
#: Positions per block of a long payload's top-k fetched when shown (``meta["topk_window"]``).
TOPK_WINDOW = 512
#: The sections sent by blocks of positions (:func:`topk_window`) in a long live widget.
WINDOWED = ("topk_tokens", "topk_probs")
#: The suffix of a token section's high plane (bits 16..23 of its indices), past 65,535 strings.
HIGH = "_high"
_TOKEN_SECTIONS = tuple(name for name, section in SECTIONS.items() if section.kind == "token")


def is_long(n_rows: int, n_positions: int) -> bool:
    """Whether a payload of ``n_rows`` rows over ``n_positions`` real positions splits its
    string table."""
    return n_rows * n_positions > LONG_PAYLOAD_CELLS


def base_token_ids(results: list[Any]) -> set[int]:
    """The token ids the base sections index, over every lens: inputs, final predictions and
    top-1s (padding's ids too: a few more strings at most)."""
    ids: set[int] = set()
    for result in results:
        for name in ("predicted_tokens", "final_tokens", "input_ids"):
            tensor = getattr(result, name, None)
            if tensor is not None:
                ids.update(np.unique(tensor.detach().cpu().numpy()).tolist())
    return ids


def split_table(
    words: dict[int, str], extra: list[str], base_ids: set[int], string_table: Any
) -> tuple[list[str], list[str], dict[Any, int]]:
    """The base table (the base ids' strings and ``extra``, the input words), the strings only
    the other ids hold after it, and every id's (and ``("w", word)``'s) index in the two as
    one list. ``string_table`` is the payload's own table builder, used for the base."""
    base = {i: w for i, w in words.items() if i in base_ids}
    table, index_of = string_table(base, extra)
    n_base = len(table)
    for token_id, word in words.items():
        if token_id in base_ids:
            continue
        if ("w", word) not in index_of:
            index_of[("w", word)] = len(table)
            table.append(word)
        index_of[token_id] = index_of[("w", word)]
    return table[:n_base], table[n_base:], index_of


def detail_tokens_section(strings: list[str]) -> np.ndarray:
    """The strings after the base table, as the bytes of their JSON list (UTF-8)."""
    return np.frombuffer(json.dumps(strings, ensure_ascii=False).encode(), dtype=np.uint8)


def narrow_token_sections(arrays: dict[str, np.ndarray]) -> None:
    """Each token section (of every lens) in 3 bytes an index at most, in place: uint16 where
    its own indices fit; past 65,535 strings (a model whose top-1s cover a 128k vocabulary) its
    low 16 bits, with the high 8 in the uint8 section ``name + HIGH`` that the front end adds
    back (5 bytes a cell with the top-1's probability, not 6)."""
    for name, array in list(arrays.items()):
        if name.rsplit("/", 1)[-1] not in _TOKEN_SECTIONS or array.dtype == np.uint16:
            continue
        top = int(array.max()) if array.size else 0
        if top > 0xFFFFFF:
            continue  # more strings than any vocabulary: left as it is
        arrays[name] = (array & U16).astype(np.uint16)
        if top > U16:
            arrays[name + HIGH] = (array >> 16).astype(np.uint8)


def join_planes(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Decoded sections with each high plane added back to its section (as the front end
    does): the indices into the table."""
    out = {name: array for name, array in arrays.items() if not name.endswith(HIGH)}
    for name, high in arrays.items():
        if name.endswith(HIGH):
            low = name[: -len(HIGH)]
            out[low] = out[low].astype(np.int64) + (high.astype(np.int64) << 16)
    return out


def topk_window(payload: Any, start: Any) -> tuple[dict[str, Any], list[bytes]]:
    """The top-k ranks 2..k of the block of positions from ``start`` (a multiple of
    ``meta["topk_window"]``), every row and lens, as a message and its buffers.

    The message says ``start``, ``stop``, the block's own ``strings`` (its top-k tokens'
    distinct texts) and each section's spec (``dtype``, ``shape`` ``[L, stop - start, k - 1]``,
    ``scale``); buffer ``i`` holds ``names[i]``, its token sections indexing ``strings``.

    Raises:
        ValueError: if the payload is not windowed or ``start`` is not the first position of
            one of its blocks (nothing is computed).
    """
    window = payload.meta.get("topk_window")
    total = int(payload.meta["total"])
    if not window:
        raise ValueError("topk_window: this payload sends its top-k whole (it is not long)")
    if (
        isinstance(start, bool)
        or not isinstance(start, int)
        or start % window
        or not (0 <= start < total)
    ):
        raise ValueError(
            f"topk_window: start must be a multiple of {window} in [0, {total}), got {start!r:.40}"
        )
    stop = min(start + window, total)
    table = list(payload.meta["tokens"]) + list(payload.later_tokens)
    wanted = {lens["prefix"] + name for lens in payload.meta["lenses"] for name in WINDOWED}
    arrays = join_planes(
        {
            name: array
            for name, array in payload.arrays.items()
            if name in wanted or name.removesuffix(HIGH) in wanted
        }
    )
    names = [
        lens["prefix"] + name
        for lens in payload.meta["lenses"]
        for name in WINDOWED
        if lens["prefix"] + name in arrays
    ]
    blocks = {name: arrays[name][:, start:stop] for name in names}
    tokens = [name for name in names if name.endswith("topk_tokens")]
    unique, inverse = np.unique(
        np.concatenate([blocks[n].ravel() for n in tokens]), return_inverse=True
    )
    strings = [table[int(i)] for i in unique]
    index_dtype = np.uint16 if len(strings) <= U16 else np.uint32
    offset = 0
    for name in tokens:
        size = blocks[name].size
        blocks[name] = (
            inverse[offset : offset + size].reshape(blocks[name].shape).astype(index_dtype)
        )
        offset += size
    specs = {
        name: {
            "dtype": blocks[name].dtype.name,
            "shape": list(blocks[name].shape),
            "scale": payload.meta["sections"][name]["scale"],
        }
        for name in names
    }
    message = {
        "action": "topk_window",
        "start": start,
        "stop": stop,
        "strings": strings,
        "names": names,
        "sections": specs,
    }
    return message, [
        np.ascontiguousarray(blocks[name]).astype(blocks[name].dtype.newbyteorder("<")).tobytes()
        for name in names
    ]
