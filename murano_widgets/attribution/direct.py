"""Direct logit attribution of one row of lens cells: the pure computation the step runs.

For cells read at one row (a layer's block output, or its ``resid_mid``), and one token per
cell (its top-1, an answer, a target; or a token minus a foil), returns each component's
direct contribution, the bias term, and the logit itself, computed apart from the
contributions (the readout run on the cell's state) so that their sum is a check, not an
identity. See :mod:`murano_widgets.attribution.readout` for the mathematics.
"""

from __future__ import annotations

from typing import Any

import torch

from murano_widgets.attribution.components import ComponentLayout
from murano_widgets.attribution.readout import Readout
from murano_widgets.types import Node

__all__ = ["attribute", "row_layer"]


def row_layer(key: Any) -> tuple[int, bool]:
    """A row key's block and whether it is the block's ``resid_mid``."""
    return (key.layer, True) if isinstance(key, Node) else (int(key), False)


def read_row(lens: Any, key: Any, hidden: torch.Tensor, n_layers: int) -> torch.Tensor:
    """A lens reading row ``key``: a ``resid_mid`` of block ``l`` with its translator of block
    ``l - 1`` (the residual stream just before that attention; the identity at block 0)."""
    layer, mid = row_layer(key)
    if not mid:
        return lens.read(layer, hidden, n_layers)
    return hidden if layer == 0 else lens.read(layer - 1, hidden, n_layers)


def _pullback(lens: Any, key: Any, hidden: torch.Tensor, r: torch.Tensor, n_layers: int) -> tuple[torch.Tensor, torch.Tensor]:
    layer, mid = row_layer(key)
    if not mid:
        return lens.read_pullback(layer, hidden, r, n_layers)
    if layer == 0:
        return r, r.new_zeros(r.shape[:-1])
    return lens.read_pullback(layer - 1, hidden, r, n_layers)


def attribute(
    layout: ComponentLayout,
    readout: Readout,
    lens: Any,
    n_layers: int,
    states: dict[str, Any],
    key: Any,
    rows: torch.Tensor,
    tokens: torch.Tensor,
    foils: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each component's direct contribution to ``tokens``' logits at ``rows`` of row ``key``.

    Args:
        layout: The model's components.
        readout: The model's readout.
        lens: The lens of the row.
        n_layers: The model's number of blocks.
        states: What :meth:`ComponentLayout.read` kept, ``[positions, d]`` each.
        key: The row: a block index (its output) or ``Node(l, "resid_mid")``.
        rows: ``[rows]`` indices into the states' positions.
        tokens: ``[rows]`` the token of each cell (-1: no token, NaN out).
        foils: ``[rows]`` tokens whose logit to subtract, or ``None``.

    Returns:
        ``contributions [rows, C]`` (NaN after the row's point), ``bias [rows]`` and
        ``logits [rows]`` (before any soft-cap), with contributions + bias = logits.
    """
    layer, mid = row_layer(key)
    source = states["mid"][layer] if mid else states["post"][layer]
    hidden = source.index_select(0, rows).float()
    y = read_row(lens, key, hidden, n_layers).float()
    normed = readout.normed(y)
    w, unembedding_bias = readout.directions(tokens, foils)
    logits = (w * normed).sum(-1) + unembedding_bias
    r = readout.pulled(y, normed, w)
    q, lens_bias = _pullback(lens, key, hidden, r, n_layers)
    contributions = layout.contributions(states, rows, q.float(), layer, mid)
    bias = lens_bias.float() + w @ readout.norm.bias + unembedding_bias
    missing = tokens < 0
    if foils is not None:
        missing = missing | (foils < 0)
    if bool(missing.any()):
        contributions[missing] = float("nan")
        bias = bias.masked_fill(missing, float("nan"))
        logits = logits.masked_fill(missing, float("nan"))
    return contributions, bias, logits
