"""A :class:`~murano_widgets.comparison.compare.LensComparison` as compact binary sections for the diff view.

The conventions of :mod:`murano_widgets.payload.lens`: only ``a``'s real positions are sent, the
prompts laid end to end on one axis of length ``total`` (prompt ``p`` covers
``offsets[p] : offsets[p] + lengths[p]``); a cell (row ``i``, prompt ``p``, position ``j``) of an
``[L, T]`` section is at ``i * total + offsets[p] + j`` (``[L, T, k]``: times ``k``, plus the
rank). Arrays are little-endian; a value is ``raw * scale``. Token strings go once in
``meta["tokens"]``; token sections hold an index into it, as the lens payload's do. An entry
with no token (a cell or position without a partner, an id without text) holds 0 and is marked 1
in the section's ``no_token_<section>`` uint8 mask of the same shape, sent only when some entry
is marked. Version 2 of the ``lens_diff`` format (version 1 held index + 1, 0 for none).

Sections (``L`` rows of ``a``, ``T`` positions, ``k`` top tokens):

- ``input_a``, ``input_b`` ``[T]``: ``a``'s token and its partner's token in ``b``;
- ``position_b`` ``[T]`` uint32: the partner's position among ``b``'s prompt's tokens, plus 1;
- ``token`` ``[T]``: the chosen token whose probability change is shown;
- ``aligned``, ``top1_differs`` ``[L, T]`` uint8;
- ``delta_prob`` ``[L, T]`` int16, ``raw / 32767`` (in [-1, 1]);
- ``token_prob_a``, ``token_prob_b`` ``[L, T]`` uint16, ``raw / 65535``;
- ``kl_a_to_b`` ``[L, T]`` uint16 scaled to its largest value (only when the comparison has KL);
- the change ``b - a`` in each heatmap metric both results hold
  (:data:`~murano_widgets.metrics.DIFF_CHANGES`; the section is the diff metric's name,
  ``"delta_" + field``: ``delta_max_probs``, ``delta_entropy``, ``delta_final_token_probs``,
  ``delta_final_token_ranks``, ``delta_kl_to_final``) ``[L, T]``, by unit: a probability's int16
  ``raw / 32767`` (as ``delta_prob``); bits int16 scaled to the largest ``|change|``
  (``scale = max / 32767``); a rank's int32, exact (a change of one rank must read as one, and
  one can be as large as the vocabulary). With it ``<field>_a`` and ``<field>_b`` ``[L, T]``,
  both sides' values (``b``'s at the partner cell) in the lens payload's codec for the unit
  (probability uint16 ``raw / 65535``, bits uint16 scaled to the largest value, rank uint32
  exact), and ``known_delta_<field>`` uint8, 1 where the change has a value (aligned, and both
  sides hold one). The metric's entry in ``meta["metrics"]`` names the three (``change``) and
  its domain, symmetric about 0;
- ``topk_tokens_a``, ``topk_tokens_b`` ``[L, T, k]`` and ``topk_probs_a``, ``topk_probs_b``
  ``[L, T, k]`` uint16: both cells' top-k, ``b``'s moved onto ``a``'s grid;
- ``no_token_input_a``, ``no_token_input_b``, ``no_token_token``, ``no_token_topk_tokens_a``,
  ``no_token_topk_tokens_b``: 1 where that token section has no token (only when any).

A cell is shown only where ``aligned`` is 1; its values elsewhere are 0 and mean nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import murano_widgets.metrics as registry
from murano_widgets.comparison.compare import LensComparison, _gather
from murano_widgets.metrics import nice_ceil
from murano_widgets.payload.codec import U16, finite_max, quantise, section_specs
from murano_widgets.payload.diff_groups import group_change_metrics
from murano_widgets.payload.lens import joined_prompts

FORMAT = "lens_diff"
FORMAT_VERSION = 2
_I16 = np.iinfo(np.int16).max
TOKEN_SECTIONS = ("input_a", "input_b", "token", "topk_tokens_a", "topk_tokens_b")


def diff_payload(comparison: LensComparison) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The comparison as ``(meta, arrays)``; :func:`~murano_widgets.payload.codec.section_bytes` turns the arrays into bytes."""
    a, b = comparison.a, comparison.b
    mask = a.attention_mask.bool()
    prompts, seqs = (t.numpy() for t in torch.nonzero(mask, as_tuple=True))
    lengths = a.lengths
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()
    total = int(sum(lengths))

    def cells(tensor: torch.Tensor) -> np.ndarray:
        """``[L, n, seq, ...]`` on ``a``'s grid to ``[L, T, ...]`` (real positions only)."""
        return tensor.detach().cpu().numpy()[:, prompts, seqs]

    def per_position(tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().cpu().numpy()[prompts, seqs]

    strings: dict[int, str] = {**(b.token_strings or {}), **(a.token_strings or {})}
    table: list[str] = []
    index_of_text: dict[str, int] = {}
    index_of_id: dict[int, int] = {}

    def token_index(ids: np.ndarray) -> np.ndarray:
        """Token ids to table index + 1 (0 for -1 or an id without text), shifted below."""
        unique, inverse = np.unique(ids, return_inverse=True)
        mapped = np.zeros(len(unique), dtype=np.int64)
        for k, token_id in enumerate(unique.tolist()):
            if token_id < 0 or token_id not in strings:
                continue
            if token_id not in index_of_id:
                text = strings[token_id]
                if text not in index_of_text:
                    index_of_text[text] = len(table)
                    table.append(text)
                index_of_id[token_id] = index_of_text[text]
            mapped[k] = index_of_id[token_id] + 1
        return mapped[inverse].reshape(ids.shape)

    aligned = cells(comparison.aligned)
    positions_b = per_position(comparison.positions)
    input_b = torch.full(tuple(a.attention_mask.shape), -1, dtype=torch.long)
    where = comparison.positions >= 0
    if b.input_ids is not None:
        prompt_index = torch.arange(a.n_inputs).unsqueeze(1).expand_as(comparison.positions)
        input_b[where] = b.input_ids[prompt_index[where], comparison.positions[where]]
    # A partner's position among b's real tokens, not its padded index.
    rank_b = torch.cumsum(b.attention_mask.long(), dim=1) - 1
    position_b = np.zeros(total, dtype=np.uint32)
    paired = positions_b >= 0
    position_b[paired] = rank_b[prompts[paired], positions_b[paired]].numpy() + 1

    topk = {}
    k = 0
    if a.topk_tokens is not None and b.topk_tokens is not None:
        k = min(a.topk_tokens.shape[-1], b.topk_tokens.shape[-1])
        topk = {
            "topk_tokens_a": a.topk_tokens[..., :k],
            "topk_probs_a": a.topk_probs[..., :k],
            "topk_tokens_b": _gather(
                b.topk_tokens[..., :k], comparison.layer_rows, comparison.positions, -1
            ),
            "topk_probs_b": _gather(
                b.topk_probs[..., :k], comparison.layer_rows, comparison.positions, 0.0
            ),
        }
    else:
        k = 1
        topk = {
            "topk_tokens_a": a.predicted_tokens.unsqueeze(-1),
            "topk_probs_a": a.max_probs.unsqueeze(-1),
            "topk_tokens_b": _gather(
                b.predicted_tokens, comparison.layer_rows, comparison.positions, -1
            ).unsqueeze(-1),
            "topk_probs_b": _gather(
                b.max_probs, comparison.layer_rows, comparison.positions, 0.0
            ).unsqueeze(-1),
        }

    arrays: dict[str, np.ndarray] = {}
    arrays["input_a"] = token_index(per_position(a.input_ids)) if a.input_ids is not None else None
    arrays["input_b"] = token_index(per_position(input_b))
    arrays["token"] = token_index(per_position(comparison.token))
    arrays["position_b"] = position_b
    for name in ("topk_tokens_a", "topk_tokens_b"):
        arrays[name] = token_index(cells(topk[name]))
    if arrays["input_a"] is None:
        # A result without input ids (another library's): its words are the tokens.
        words = [a.input_words[p][s] for p, s in zip(prompts.tolist(), seqs.tolist(), strict=True)]
        for word in words:
            if word not in index_of_text:
                index_of_text[word] = len(table)
                table.append(word)
        arrays["input_a"] = np.array([index_of_text[w] + 1 for w in words], dtype=np.int64)
    # The lens payload's convention: a direct index, "no token" in a mask sent only when needed.
    index_dtype = np.uint16 if len(table) <= U16 else np.uint32
    for name in TOKEN_SECTIONS:
        shifted = arrays[name]
        none = shifted == 0
        arrays[name] = np.where(none, 0, shifted - 1).astype(index_dtype)
        if none.any():
            arrays[f"no_token_{name}"] = none.astype(np.uint8)

    def unit(values: np.ndarray) -> np.ndarray:
        return quantise(values, 1.0, np.uint16)

    delta = np.nan_to_num(cells(comparison.delta_prob).astype(np.float64), nan=0.0)
    arrays["aligned"] = aligned.astype(np.uint8)
    arrays["top1_differs"] = cells(comparison.top1_differs).astype(np.uint8)
    arrays["delta_prob"] = quantise(delta, 1.0, np.int16)
    arrays["token_prob_a"] = unit(cells(comparison.token_prob_a))
    arrays["token_prob_b"] = unit(cells(comparison.token_prob_b))
    delta_known = aligned & np.isfinite(cells(comparison.delta_prob))
    arrays["delta_known"] = delta_known.astype(np.uint8)
    scales = {"delta_prob": 1 / _I16, "token_prob_a": 1 / U16, "token_prob_b": 1 / U16}
    for side in ("a", "b"):
        arrays[f"topk_probs_{side}"] = unit(cells(topk[f"topk_probs_{side}"]))
        scales[f"topk_probs_{side}"] = 1 / U16
    kl_max = 0.0
    if comparison.kl_a_to_b is not None:
        kl = cells(comparison.kl_a_to_b).astype(np.float64)
        finite = kl[np.isfinite(kl)]
        kl_max = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        arrays["kl_a_to_b"] = quantise(kl, kl_max, np.uint16)
        scales["kl_a_to_b"] = kl_max / U16

    known = np.abs(delta[delta_known]) if delta_known.any() else np.zeros(1)
    # A round bound from 0.01 to 1, so the legend's ends read as plain numbers.
    delta_max = min(1.0, nice_ceil(max(float(known.max()) if known.size else 0.0, 0.01)))
    metrics = []
    for metric in registry.DIFF_METRICS.values():
        name = metric.name
        if name in registry.DIFF_CHANGES:
            continue
        if name == "delta_prob":
            available, domain = bool(delta_known.any()), [-delta_max, delta_max]
            reason = None if available else "no aligned cell knows the chosen token's probability"
        elif name == "kl":
            available, domain = comparison.kl_a_to_b is not None, [0.0, kl_max or 1.0]
            reason = (
                None
                if available
                else "needs both full distributions: run compare_lenses(...) (or both lenses "
                "with store_full_probs=True)"
            )
        else:
            available, domain, reason = bool(aligned.any()), [0, 1], None
        metrics.append(
            {
                **metric.as_json(),
                "domain": domain,
                "available": available,
                "unavailable_reason": reason,
                "change": (
                    {"a": "token_prob_a", "b": "token_prob_b", "known": "delta_known"}
                    if name == "delta_prob"
                    else None
                ),
            }
        )

    metrics.extend(_change_sections(comparison, cells, arrays, scales))
    order = list(registry.DIFF_METRICS)
    metrics.sort(key=lambda entry: order.index(entry["name"]))
    # Token groups both sides hold: one change each, after the registry's (none without groups).
    metrics.extend(group_change_metrics(comparison, cells, arrays, scales))

    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "labels": list(comparison.labels),
        "layers": [int(x) for x in a.layers],
        "b_layers": [int(x) for x in comparison.b_layers],
        "b_has_row": [row >= 0 for row in comparison.layer_rows],
        "depth_a": _depth(a),
        "depth_b": _depth(b),
        "align": comparison.align,
        "alignment_note": comparison.alignment_note,
        "token_rule": comparison.token_rule,
        "source": comparison.source,
        "prompts_a": list(a.prompts) if a.prompts else joined_prompts(a),
        "prompts_b": list(b.prompts) if b.prompts else joined_prompts(b),
        "lengths": lengths,
        "offsets": offsets,
        "total": total,
        "top_k": int(k),
        "tokens": table,
        "metrics": metrics,
        "sections": section_specs(arrays, scales),
    }
    return meta, arrays


def _change_sections(
    comparison: LensComparison,
    cells: Callable[[torch.Tensor], np.ndarray],
    arrays: dict[str, np.ndarray],
    scales: dict[str, float],
) -> list[dict[str, Any]]:
    """The change in each heatmap metric (:data:`DIFF_CHANGES`): its sections (added to
    ``arrays`` and ``scales``) and its ``meta["metrics"]`` entries, in registry order.

    Nothing here names a metric: a unit picks the codec, the registry picks the metrics."""
    entries = []
    for name, source in registry.DIFF_CHANGES.items():
        metric = registry.DIFF_METRICS[name]
        field, unit = source.field, source.unit
        entry: dict[str, Any] = {**metric.as_json(), "domain": [-1.0, 1.0], "change": None}
        lacking = comparison.lacking(field)
        if lacking and metric.needs:
            continue  # neither side was run with what it needs: not listed
        if lacking:
            entries.append(
                {**entry, "available": False, "unavailable_reason": f"{lacking} {field}"}
            )
            continue
        values_a, values_b = (cells(t).astype(np.float64) for t in comparison.sides(field))
        delta = cells(comparison.metric_deltas[name]).astype(np.float64)
        known = np.isfinite(delta)
        largest = float(np.abs(delta[known]).max()) if known.any() else 0.0
        names = {"a": f"{field}_a", "b": f"{field}_b", "known": f"known_{name}"}
        arrays[names["known"]] = known.astype(np.uint8)
        if unit == "rank":
            arrays[name] = np.where(known, delta, 0).astype(np.int32)
            for side, values in (("a", values_a), ("b", values_b)):
                arrays[names[side]] = np.where(known, values, 0).astype(np.uint32)
            bound = nice_ceil(largest) if largest > 0 else 1.0
        elif unit == "probability":
            arrays[name] = quantise(delta, 1.0, np.int16)
            scales[name] = 1 / _I16
            for side, values in (("a", values_a), ("b", values_b)):
                arrays[names[side]] = quantise(values, 1.0, np.uint16)
                scales[names[side]] = 1 / U16
            bound = min(1.0, nice_ceil(max(largest, 0.01)))
        elif unit == "logit":  # signed on both sides: each scaled to its largest |value|
            top = largest if largest > 0 else 1.0
            arrays[name] = quantise(delta, top, np.int16)
            scales[name] = top / _I16
            for side, values in (("a", values_a), ("b", values_b)):
                finite = np.abs(values[np.isfinite(values)])
                side_top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
                arrays[names[side]] = quantise(values, side_top, np.int16)
                scales[names[side]] = side_top / _I16
            bound = nice_ceil(largest) if largest > 0 else 1.0
        else:  # bits, or any other unit: scaled to the largest value
            top = largest if largest > 0 else 1.0
            arrays[name] = quantise(delta, top, np.int16)
            scales[name] = top / _I16
            for side, values in (("a", values_a), ("b", values_b)):
                side_top = finite_max(values, 1.0)
                arrays[names[side]] = quantise(values, side_top, np.uint16)
                scales[names[side]] = side_top / U16
            bound = nice_ceil(largest) if largest > 0 else 1.0
        available = bool(known.any())
        entries.append(
            {
                **entry,
                "domain": [-bound, bound],
                "available": available,
                "unavailable_reason": None
                if available
                else "no aligned cell has a value on both sides",
                "change": names,
            }
        )
    return entries


def _depth(result: Any) -> int:
    from murano_widgets.comparison.alignment import model_depth

    return model_depth(result)
