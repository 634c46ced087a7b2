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
from murano_widgets.attribution.readout import Readout, normalise
from murano_widgets.types import Node

__all__ = ["attribute", "decompose_rows", "read_row", "row_layer"]


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


def _pullback(
    lens: Any, key: Any, hidden: torch.Tensor, r: torch.Tensor, n_layers: int
) -> tuple[torch.Tensor, torch.Tensor]:
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
    w, unembedding_bias = readout.directions(tokens, foils)
    logits = (w * normalise(readout.norm, y)).sum(-1) + unembedding_bias
    r = readout.pulled(y, w)
    q, lens_bias = _pullback(lens, key, hidden, r, n_layers)
    contributions = layout.contributions(states, rows, q.float(), layer, mid)
    bias = lens_bias.float() + w @ readout.norm.bias + unembedding_bias
    # No branch on values: this also runs inside a trace.
    missing = tokens < 0
    if foils is not None:
        missing = missing | (foils < 0)
    contributions = contributions.masked_fill(missing.unsqueeze(-1), float("nan"))
    bias = bias.masked_fill(missing, float("nan"))
    logits = logits.masked_fill(missing, float("nan"))
    return contributions, bias, logits


def decompose_rows(
    layout: ComponentLayout,
    readout: Readout,
    lens: Any,
    n_layers: int,
    states: dict[str, Any],
    keys: list[Any],
    rows: torch.Tensor,
    top1: torch.Tensor,
    last_rows: torch.Tensor,
    prompt_of: torch.Tensor,
    answers: torch.Tensor | None,
    foils: torch.Tensor | None,
    targets: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """Every attribution field of one lens over the shown cells (not yet laid out as the
    result's padded grid).

    Args:
        layout, readout, lens, n_layers, states: As for :func:`attribute`.
        keys: The result's rows.
        rows: ``[n_shown]`` the shown cells' indices into the states.
        top1: ``[n_rows, n_shown]`` each cell's top-1 token.
        last_rows: ``[n_inputs]`` each prompt's last shown cell, as an index into ``rows``.
        prompt_of: ``[n_shown]`` the prompt of each shown cell.
        answers: ``[n_inputs]`` each prompt's answer token (-1 for none), or ``None``.
        foils: ``[n_inputs]`` each prompt's foil token, or ``None``.
        targets: ``[n_targets]`` the targets' tokens, or ``None``.

    Returns:
        ``contributions [n_rows, n_shown, C]``, ``contribution_bias``/``top1_logits``
        ``[n_rows, n_shown]``; with answers, ``answer_token_contributions [n_rows, n_shown, C]``
        and ``answer_token_bias [n_rows, n_shown]`` (the answer's first token at every cell,
        minus the foil's), ``answer_row_contributions [n_rows, n_inputs, C]``,
        ``answer_row_bias [n_rows, n_inputs]``, ``answer_contributions [C, n_inputs]`` and
        ``answer_contribution_bias [n_inputs]`` (under the model's own readout, the last
        block's output); with targets, ``target_contributions [n_rows, n_shown, n_targets, C]``
        and ``target_bias [n_rows, n_shown, n_targets]``.
    """
    out: dict[str, list[torch.Tensor]] = {}

    def add(name: str, value: torch.Tensor) -> None:
        out.setdefault(name, []).append(value)

    for index, key in enumerate(keys):
        contributions, bias, logits = attribute(
            layout, readout, lens, n_layers, states, key, rows, top1[index]
        )
        add("contributions", contributions)
        add("contribution_bias", bias)
        add("top1_logits", logits)
        if answers is not None:
            contributions, bias, _ = attribute(
                layout,
                readout,
                lens,
                n_layers,
                states,
                key,
                rows,
                answers[prompt_of],
                None if foils is None else foils[prompt_of],
            )
            add("answer_token_contributions", contributions)
            add("answer_token_bias", bias)
            add("answer_row_contributions", contributions[last_rows])
            add("answer_row_bias", bias[last_rows])
        if targets is not None:
            per_target = [
                attribute(
                    layout,
                    readout,
                    lens,
                    n_layers,
                    states,
                    key,
                    rows,
                    target.expand(len(rows)),
                )
                for target in targets
            ]
            add("target_contributions", torch.stack([c for c, _, _ in per_target], dim=1))
            add("target_bias", torch.stack([b for _, b, _ in per_target], dim=1))
    fields = {name: torch.stack(values) for name, values in out.items()}
    if answers is not None:
        contributions, bias, _ = attribute(
            layout, readout, lens, n_layers, states, n_layers - 1, rows[last_rows], answers, foils
        )
        fields["answer_contributions"] = contributions.t()
        fields["answer_contribution_bias"] = bias
    return fields
