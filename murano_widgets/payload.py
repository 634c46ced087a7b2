"""Payload encoding: a ``LogitLensResult`` as compact binary sections for the front end.

The widget syncs two traits: ``_meta`` (small JSON) and ``_sections`` (name → bytes, sent as
binary buffers). Only real (non-padded) positions are sent. Positions of all prompts are laid
end to end on one axis of length ``total``; prompt ``p`` covers
``offsets[p] : offsets[p] + lengths[p]``. A cell (row ``i``, prompt ``p``, position ``j``) of an
``[L, T]`` section is at ``i * total + offsets[p] + j``. Arrays are little-endian; a value is
``raw * scale``. Token strings go once in ``meta["tokens"]``; sections hold indices into it.

Sections (``L`` rows, ``T`` positions, ``k`` top tokens):

==================  ======================  =====================================================
name                shape, dtype            meaning
==================  ======================  =====================================================
input_tokens        [T] uint16/uint32       the input token at each position
final_tokens        [T] uint16/uint32       the model's own top-1 prediction at each position
top1_tokens         [L, T] uint16/uint32    each layer's top-1 token
top1_probs          [L, T] uint16           its probability (scale 1/65535)
missing             [L, T] uint8            1 where the layer's output was not finite (if any)
entropy             [L, T] uint16           bits (scale max_entropy/65535)            (details)
final_probs         [L, T] uint16           p(final prediction) (scale 1/65535)       (details)
final_ranks         [L, T] uint16           its rank, 0 = top-1; 65535 means ≥ 65535 (details)
kl                  [L, T] uint16           KL(final ‖ layer) in bits                 (details)
topk_tokens         [L, T, k-1] uint16/32   ranks 2..k                                (details)
topk_probs          [L, T, k-1] uint8       their probabilities (scale 1/255)         (details)
==================  ======================  =====================================================

The base sections cost 4 bytes a cell (6 with a token table over 65,535 strings); the detail
sections are sent when the front end first asks for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .result import LogitLensResult

__all__ = ["BASE_SECTIONS", "DETAIL_SECTIONS", "LensPayload", "decode_sections"]

BASE_SECTIONS = ("input_tokens", "final_tokens", "top1_tokens", "top1_probs", "missing")
DETAIL_SECTIONS = ("entropy", "final_probs", "final_ranks", "kl", "topk_tokens", "topk_probs")
FORMAT_VERSION = 1
_U16 = 65535


@dataclass
class LensPayload:
    """A result flattened to real positions and quantised, ready to be sent in pieces.

    Build it once per result with :meth:`from_result`; :meth:`sections` then encodes any subset.
    """

    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]

    @classmethod
    def from_result(cls, result: LogitLensResult, model_name: str | None = None) -> LensPayload:
        """Flattens and quantises ``result`` (which must carry the reduced fields)."""
        mask = result.attention_mask.bool()
        batch_index, position_index = (t.numpy() for t in torch.nonzero(mask, as_tuple=True))
        lengths = result.lengths
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()

        def cells(tensor: torch.Tensor) -> np.ndarray:
            return tensor.detach().cpu().numpy()[:, batch_index, position_index]

        def per_position(tensor: torch.Tensor) -> np.ndarray:
            return tensor.detach().cpu().numpy()[batch_index, position_index]

        top1_probs = cells(result.max_probs).astype(np.float64)
        missing = ~np.isfinite(top1_probs)
        vocab_size = int(result.vocab_size or 0) or None
        max_entropy = math.log2(vocab_size) if vocab_size else _finite_max(result.entropy, 1.0)
        topk_tokens = cells(result.topk_tokens) if result.topk_tokens is not None else None
        k = 1 if topk_tokens is None else int(topk_tokens.shape[-1])

        # One table of distinct strings; every id maps to its string's index.
        id_arrays = {
            "input_tokens": per_position(result.input_ids)
            if result.input_ids is not None
            else None,
            "final_tokens": per_position(result.final_tokens),
            "top1_tokens": cells(result.predicted_tokens),
            "topk_tokens": topk_tokens[..., 1:] if topk_tokens is not None else None,
        }
        words = _id_words(result)
        extra = (
            [] if result.input_ids is not None else [w for row in result.input_words for w in row]
        )
        table, index_of = _string_table(words, extra)
        index_dtype = np.uint16 if len(table) <= _U16 else np.uint32
        arrays: dict[str, np.ndarray] = {}
        for name, ids in id_arrays.items():
            if ids is not None:
                arrays[name] = _lookup(index_of, ids).astype(index_dtype)
        if "input_tokens" not in arrays:
            arrays["input_tokens"] = np.array(
                [
                    index_of[("w", result.input_words[b][s])]
                    for b, s in zip(batch_index, position_index, strict=True)
                ],
                dtype=index_dtype,
            )
        arrays["top1_probs"] = _quantise(top1_probs, 1.0, np.uint16)
        if missing.any():
            arrays["missing"] = missing.astype(np.uint8)
        kl_max = _finite_max(result.kl_to_final, 1.0)
        scales = {
            "top1_probs": 1 / _U16,
            "entropy": max_entropy / _U16,
            "final_probs": 1 / _U16,
            "final_ranks": 1.0,
            "kl": kl_max / _U16,
            "topk_probs": 1 / 255,
        }
        if result.entropy is not None:
            arrays["entropy"] = _quantise(cells(result.entropy), max_entropy, np.uint16)
        if result.final_token_probs is not None:
            arrays["final_probs"] = _quantise(cells(result.final_token_probs), 1.0, np.uint16)
        if result.final_token_ranks is not None:
            ranks = cells(result.final_token_ranks).astype(np.int64)
            arrays["final_ranks"] = np.clip(ranks, 0, _U16).astype(np.uint16)
        if result.kl_to_final is not None:
            arrays["kl"] = _quantise(cells(result.kl_to_final), kl_max, np.uint16)
        if topk_tokens is not None and k > 1:
            arrays["topk_probs"] = _quantise(cells(result.topk_probs)[..., 1:], 1.0, np.uint8)
        meta = {
            "version": FORMAT_VERSION,
            "model_name": _display_name(model_name or result.model_name or ""),
            "layers": [int(layer) for layer in result.layers],
            "n_model_layers": int(max(result.layers)) + 1,
            "prompts": list(result.prompts) if result.prompts else _joined(result),
            "lengths": lengths,
            "offsets": offsets,
            "total": int(sum(lengths)),
            "tokens": table,
            "top_k": k if "topk_probs" in arrays else 1,
            "max_entropy": max_entropy,
            "sections": {
                name: {
                    "dtype": array.dtype.name,
                    "shape": list(array.shape),
                    "scale": scales.get(name, 1.0),
                }
                for name, array in arrays.items()
            },
        }
        return cls(meta, arrays)

    def sections(self, names: tuple[str, ...] | list[str]) -> dict[str, bytes]:
        """The named sections that exist, as little-endian bytes."""
        return {
            name: np.ascontiguousarray(self.arrays[name])
            .astype(self.arrays[name].dtype.newbyteorder("<"), copy=False)
            .tobytes()
            for name in names
            if name in self.arrays
        }

    def base_sections(self) -> dict[str, bytes]:
        """What the default view needs."""
        return self.sections(BASE_SECTIONS)

    def all_sections(self) -> dict[str, bytes]:
        """Everything: the base and the detail sections."""
        return self.sections(BASE_SECTIONS + DETAIL_SECTIONS)


def decode_sections(meta: dict[str, Any], sections: dict[str, bytes]) -> dict[str, np.ndarray]:
    """Decodes sections back to arrays of values (``raw * scale``), as the front end does."""
    out = {}
    for name, data in sections.items():
        info = meta["sections"][name]
        raw = np.frombuffer(data, dtype=np.dtype(info["dtype"]).newbyteorder("<"))
        raw = raw.reshape(info["shape"])
        out[name] = raw if info["scale"] == 1.0 else raw.astype(np.float64) * info["scale"]
    return out


def _quantise(values: np.ndarray, top: float, dtype: type) -> np.ndarray:
    levels = np.iinfo(dtype).max
    scaled = np.nan_to_num(np.asarray(values, dtype=np.float64) / top, nan=0.0, posinf=1.0)
    return np.round(np.clip(scaled, 0.0, 1.0) * levels).astype(dtype)


def _finite_max(tensor: torch.Tensor | None, default: float) -> float:
    if tensor is None:
        return default
    finite = tensor[torch.isfinite(tensor)]
    return float(finite.max()) if finite.numel() and float(finite.max()) > 0 else default


def _id_words(result: LogitLensResult) -> dict[int, str]:
    """Every token id's decoded text, from the result's table or from its word lists."""
    if result.token_strings is not None:
        return dict(result.token_strings)
    words: dict[int, str] = {}
    ids = result.predicted_tokens.reshape(-1).tolist()
    flat_words = [w for layer in result.predicted_words for row in layer for w in row]
    words.update(zip(ids, flat_words, strict=True))
    if result.input_ids is not None:
        flat_inputs = [w for row in result.input_words for w in row]
        words.update(zip(result.input_ids.reshape(-1).tolist(), flat_inputs, strict=True))
    return words


def _string_table(words: dict[int, str], extra: list[str]) -> tuple[list[str], dict[Any, int]]:
    """The distinct strings, and each token id's (and each ``("w", word)``'s) index among them."""
    table: list[str] = []
    position: dict[str, int] = {}
    index_of: dict[Any, int] = {}
    pairs = [*words.items(), *((None, word) for word in extra)]
    for token_id, word in pairs:
        if word not in position:
            position[word] = len(table)
            table.append(word)
        if token_id is not None:
            index_of[token_id] = position[word]
        index_of[("w", word)] = position[word]
    return table, index_of


def _lookup(index_of: dict[Any, int], ids: np.ndarray) -> np.ndarray:
    """Maps token ids to table indices; an id the table lacks (e.g. -1) maps to a '?' entry."""
    unique, inverse = np.unique(ids, return_inverse=True)
    mapped = np.array([index_of.get(int(i), 0) for i in unique], dtype=np.int64)
    return mapped[inverse].reshape(ids.shape)


def _display_name(name: str) -> str:
    """A hub id as it is; a local folder by its own name (the full path is noise)."""
    path = Path(name)
    return path.name if name and path.is_dir() else name


def _joined(result: LogitLensResult) -> list[str]:
    """A prompt's text rebuilt from its input words, when the result does not carry prompts."""
    texts = []
    for p in range(result.n_inputs):
        positions = result.positions(p).tolist()
        texts.append("".join(result.input_words[p][s] for s in positions))
    return texts
