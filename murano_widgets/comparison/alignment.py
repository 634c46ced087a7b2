"""Which cell of one lens result stands for which cell of another.

Two results compared cell by cell need two maps: from each row (layer) of ``a`` to a row of
``b``, and from each position of ``a``'s prompts to a position of ``b``'s. Cells without a
partner are missing (-1 in the maps), never shifted onto a neighbour.

- Layers: equal depths pair layer ``l`` with layer ``l``; models of different depths pair by
  relative depth, ``l`` of ``a`` with ``round(l * (Lb - 1) / (La - 1))`` of ``b`` (so first
  with first and last with last). A partner that ``b`` did not compute is missing.
- Positions (prompt ``p`` of ``a`` with prompt ``p`` of ``b``):

  - ``"tokens"``: the two prompts have the same tokens, so position ``j`` pairs with ``j``;
  - ``"end"``: aligned at their last tokens, ``j`` of a prompt of ``na`` tokens with
    ``j + nb - na`` of one of ``nb`` (what a clean and a corrupted prompt usually need);
  - ``"prefix"``: the positions of the longest shared token prefix pair one to one; the rest
    has no partner;
  - ``"auto"``: ``"tokens"`` when every pair of prompts has the same tokens, else an error
    asking for ``align=``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from murano_widgets.results.result import LogitLensResult

ALIGN_MODES = ("auto", "tokens", "end", "prefix")


@dataclass
class Alignment:
    """The two maps from ``a``'s cells to ``b``'s, and how they were made.

    Attributes:
        mode: The position alignment used: ``"tokens"``, ``"end"`` or ``"prefix"``.
        layer_rows: For each row of ``a``, the row of ``b`` it pairs with, or -1.
        b_layers: For each row of ``a``, the model layer of ``b`` it pairs with (whether or
            not ``b`` computed it).
        positions: ``[n_inputs, seq_a]``: for each padded position of ``a``, the padded
            sequence index of its partner in ``b``, or -1 (padding included).
        depth_a, depth_b: The two models' numbers of layers.
        note: One sentence a person reads: how layers and positions were paired.
    """

    mode: str
    layer_rows: list[int]
    b_layers: list[int]
    positions: torch.Tensor
    depth_a: int
    depth_b: int
    note: str


def check_align(align: Any) -> str:
    """``align`` if it is one of :data:`ALIGN_MODES`.

    Raises:
        ValueError: Naming the given value and the allowed ones.
    """
    if not isinstance(align, str) or align not in ALIGN_MODES:
        raise ValueError(f"align must be one of {', '.join(map(repr, ALIGN_MODES))}; got {align!r}")
    return align


def model_depth(result: LogitLensResult) -> int:
    """The model's number of layers, or (when the result does not say) its deepest row + 1."""
    if result.n_model_layers is not None:
        return int(result.n_model_layers)
    return max(result.layers) + 1


def partner_layer(layer: int, depth_a: int, depth_b: int) -> int:
    """The layer of a ``depth_b``-layer model at the same relative depth as ``layer`` of ``a``.

    Halves round up (``floor(x + 0.5)``), not to even, so the map does not depend on parity.
    """
    if depth_a == depth_b:
        return layer
    if depth_a == 1:
        return depth_b - 1
    # floor(x + 0.5) in exact integer arithmetic.
    return (2 * layer * (depth_b - 1) + (depth_a - 1)) // (2 * (depth_a - 1))


def prompt_tokens(result: LogitLensResult, prompt: int) -> list[Any]:
    """The real tokens of one prompt: ids when the result has them, else the decoded words."""
    positions = result.positions(prompt)
    if result.input_ids is not None:
        return result.input_ids[prompt, positions].tolist()
    return [result.input_words[prompt][s] for s in positions.tolist()]


def align_results(a: LogitLensResult, b: LogitLensResult, align: str) -> Alignment:
    """Pairs ``a``'s rows and positions with ``b``'s (see the module's description).

    Raises:
        ValueError: For an unknown ``align``, prompts that differ under ``align="auto"`` or
            ``"tokens"`` (naming the first prompt that differs), or results with different
            numbers of prompts.
    """
    align = check_align(align)
    if a.n_inputs != b.n_inputs:
        raise ValueError(
            f"a has {a.n_inputs} prompts and b has {b.n_inputs}: compare pairs prompt i of a "
            "with prompt i of b, so give both the same number of prompts"
        )
    tokens_a = [prompt_tokens(a, p) for p in range(a.n_inputs)]
    tokens_b = [prompt_tokens(b, p) for p in range(b.n_inputs)]
    differing = [p for p in range(a.n_inputs) if tokens_a[p] != tokens_b[p]]
    if align in ("auto", "tokens") and differing:
        p = differing[0]
        raise ValueError(
            f"align={align!r} needs the same tokens in both results, but prompt {p} differs "
            f"({len(tokens_a[p])} tokens in a, {len(tokens_b[p])} in b"
            + (f"; {len(differing)} prompts differ in all" if len(differing) > 1 else "")
            + "): pass align='end' to pair positions from the last token, or align='prefix' "
            "to pair the shared prefix only"
        )
    mode = "tokens" if align == "auto" else align

    n_inputs, seq_a = a.attention_mask.shape
    positions = torch.full((n_inputs, seq_a), -1, dtype=torch.long)
    for p in range(n_inputs):
        pos_a, pos_b = a.positions(p), b.positions(p)
        na, nb = len(pos_a), len(pos_b)
        if mode == "tokens":
            partner = torch.arange(na)
        elif mode == "end":
            partner = torch.arange(na) + (nb - na)
        else:
            shared = 0
            for x, y in zip(tokens_a[p], tokens_b[p], strict=False):
                if x != y:
                    break
                shared += 1
            partner = torch.where(torch.arange(na) < shared, torch.arange(na), -1)
        valid = (partner >= 0) & (partner < nb)
        positions[p, pos_a[valid]] = pos_b[partner[valid]]

    depth_a, depth_b = model_depth(a), model_depth(b)
    b_layers = [partner_layer(layer, depth_a, depth_b) for layer in a.layers]
    row_of_b = {layer: row for row, layer in enumerate(b.layers)}
    layer_rows = [row_of_b.get(layer, -1) for layer in b_layers]
    note = _note(mode, a, depth_a, depth_b, b_layers, layer_rows)
    return Alignment(mode, layer_rows, b_layers, positions, depth_a, depth_b, note)


def gather_aligned(
    values_b: torch.Tensor, layer_rows: list[int], positions: torch.Tensor, fill: Any
) -> torch.Tensor:
    """``b``'s ``[rows_b, n_inputs, seq_b, ...]`` field on ``a``'s grid ``[rows_a, n, seq_a, ...]``.

    ``layer_rows`` and ``positions`` are the alignment's maps; cells without a partner get
    ``fill`` (``False`` for a boolean field).
    """
    rows = torch.tensor(layer_rows, dtype=torch.long)
    n_inputs = positions.shape[0]
    prompts = torch.arange(n_inputs).unsqueeze(1).expand_as(positions)
    picked = values_b[rows.clamp_min(0)][:, prompts, positions.clamp_min(0)]
    ok = (rows >= 0).view(-1, 1, 1) & (positions >= 0).unsqueeze(0)
    while ok.dim() < picked.dim():
        ok = ok.unsqueeze(-1)
    return picked.masked_fill(~ok, fill) if picked.dtype != torch.bool else picked & ok


def _note(
    mode: str,
    a: LogitLensResult,
    depth_a: int,
    depth_b: int,
    b_layers: list[int],
    layer_rows: list[int],
) -> str:
    parts = []
    if depth_a == depth_b:
        parts.append(f"layer l of a ↔ layer l of b (both {depth_a} layers)")
    else:
        pairs = ", ".join(f"{la}→{lb}" for la, lb in zip(a.layers, b_layers, strict=True))
        parts.append(
            f"a has {depth_a} layers and b has {depth_b}: layers align by relative depth, "
            f"l of a ↔ round(l·{depth_b - 1}/{depth_a - 1}) of b ({pairs})"
        )
    missing = [la for la, row in zip(a.layers, layer_rows, strict=True) if row < 0]
    if missing:
        parts.append(
            f"b lacks the partner of layer{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(str, missing))} of a (shown as missing)"
        )
    parts.append(
        {
            "tokens": "positions align one to one (same tokens)",
            "end": "positions align from the last token (unpaired ones are missing)",
            "prefix": "positions of the shared token prefix align one to one (the rest is missing)",
        }[mode]
    )
    return "; ".join(parts) + "."
