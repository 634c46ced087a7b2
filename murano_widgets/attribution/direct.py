"""Direct logit attribution of one row of lens cells: the pure computation the step runs.

For cells read at one row (a layer's block output, or its ``resid_mid``), and one token per
cell (its top-1, an answer, a target; or a token minus a foil), returns each component's
direct contribution, the bias term, and the logit itself, computed apart from the
contributions (the readout run on the cell's state) so that their sum is a check, not an
identity. See :mod:`murano_widgets.attribution.readout` for the mathematics.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from murano_widgets.attribution.components import ComponentLayout
from murano_widgets.attribution.readout import Readout, normalise
from murano_widgets.types import Node

__all__ = ["Ask", "attribute", "decompose_rows", "read_row", "row_layer"]


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


class Ask(NamedTuple):
    """One row of cells and the token (and foil) per cell whose logit to attribute."""

    key: Any
    rows: torch.Tensor
    tokens: torch.Tensor
    foils: torch.Tensor | None = None


def _readout_side(
    readout: Readout, lens: Any, n_layers: int, states: dict[str, Any], ask: Ask
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The direction ``q`` ``[rows, d]`` the components are read along (the readout's
    direction pulled back through the norm and the lens), the bias term, the logit and the
    cells with no token."""
    layer, mid = row_layer(ask.key)
    source = states["mid"][layer] if mid else states["post"][layer]
    hidden = source.index_select(0, ask.rows).float()
    y = read_row(lens, ask.key, hidden, n_layers).float()
    w, unembedding_bias = readout.directions(ask.tokens, ask.foils)
    logits = (w * normalise(readout.norm, y)).sum(-1) + unembedding_bias
    r = readout.pulled(y, w)
    q, lens_bias = _pullback(lens, ask.key, hidden, r, n_layers)
    bias = lens_bias.float() + w @ readout.norm.bias + unembedding_bias
    # No branch on values: this also runs inside a trace.
    missing = ask.tokens < 0
    if ask.foils is not None:
        missing = missing | (ask.foils < 0)
    return q.float(), bias, logits, missing


def attribute(
    layout: ComponentLayout,
    readout: Readout,
    lens: Any,
    n_layers: int,
    states: dict[str, Any],
    asks: list[Ask],
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Each component's direct contribution to each ask's tokens' logits at its rows.

    Asks over the same rows share the component terms (see
    :meth:`ComponentLayout.contributions`), in groups whose directions stay under 128 MiB.

    Args:
        layout: The model's components.
        readout: The model's readout.
        lens: The lens of the rows.
        n_layers: The model's number of blocks.
        states: What :meth:`ComponentLayout.read` kept, ``[positions, d]`` each.
        asks: Each a row key (a block index, its output, or ``Node(l, "resid_mid")``),
            ``[rows]`` indices into the states' positions, ``[rows]`` the token of each cell
            (-1: no token, NaN out) and ``[rows]`` tokens whose logit to subtract, or ``None``.

    Returns:
        Per ask: ``contributions [rows, C]`` (NaN after the row's point), ``bias [rows]`` and
        ``logits [rows]`` (before any soft-cap), with contributions + bias = logits.
    """
    out: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    for group in _groups(asks, readout):
        sides = [_readout_side(readout, lens, n_layers, states, ask) for ask in group]
        contributions = layout.contributions(
            states,
            group[0].rows,
            [(q, *row_layer(ask.key)) for ask, (q, _, _, _) in zip(group, sides, strict=True)],
        )
        for each, (_, bias, logits, missing) in zip(contributions, sides, strict=True):
            out.append(
                (
                    each.masked_fill(missing.unsqueeze(-1), float("nan")),
                    bias.masked_fill(missing, float("nan")),
                    logits.masked_fill(missing, float("nan")),
                )
            )
    return out


# The directions of one group of asks ([rows, asks, d] float32) stay under this. Each group
# computes every block's head vectors again: at 64 MiB GPT-2 large's 36 rows of 8 x 64 cells
# made two groups and 61 blocks' vectors (0.95 s), at 128 MiB one group and 36.
_GROUP_BYTES = 128 * 2**20


def _groups(asks: list[Ask], readout: Readout) -> list[list[Ask]]:
    """Runs of asks over the same rows, each run cut so that its directions fit _GROUP_BYTES."""
    groups: list[list[Ask]] = []
    d_model = int(readout.norm.bias.shape[-1])
    for ask in asks:
        size = max(1, _GROUP_BYTES // (4 * d_model * max(1, len(ask.rows))))
        last = groups[-1] if groups else None
        if last is not None and last[0].rows is ask.rows and len(last) < size:
            last.append(ask)
        else:
            groups.append([ask])
    return groups


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
    asks: list[tuple[str, Ask]] = []
    for index, key in enumerate(keys):
        asks.append(("top1", Ask(key, rows, top1[index])))
        if answers is not None:
            answer_foils = None if foils is None else foils[prompt_of]
            asks.append(("answer", Ask(key, rows, answers[prompt_of], answer_foils)))
        if targets is not None:
            asks += [("target", Ask(key, rows, target.expand(len(rows)))) for target in targets]
    if answers is not None:
        # The answer under the model's own readout (the last block's output), at each
        # prompt's last cell.
        asks.append(("final", Ask(n_layers - 1, rows[last_rows], answers, foils)))
    done = attribute(layout, readout, lens, n_layers, states, [ask for _, ask in asks])
    out: dict[str, list[torch.Tensor]] = {}

    def add(name: str, value: torch.Tensor) -> None:
        out.setdefault(name, []).append(value)

    per_target: list[tuple[torch.Tensor, torch.Tensor]] = []
    for (kind, _), (contributions, bias, logits) in zip(asks, done, strict=True):
        if kind == "top1":
            add("contributions", contributions)
            add("contribution_bias", bias)
            add("top1_logits", logits)
        elif kind == "answer":
            add("answer_token_contributions", contributions)
            add("answer_token_bias", bias)
            add("answer_row_contributions", contributions[last_rows])
            add("answer_row_bias", bias[last_rows])
        elif kind == "target":
            assert targets is not None  # a "target" ask is made only with targets
            per_target.append((contributions, bias))
            if len(per_target) == len(targets):
                add("target_contributions", torch.stack([c for c, _ in per_target], dim=1))
                add("target_bias", torch.stack([b for _, b in per_target], dim=1))
                per_target = []
    fields = {name: torch.stack(values) for name, values in out.items()}
    if answers is not None:
        contributions, bias, _ = done[-1]
        fields["answer_contributions"] = contributions.t()
        fields["answer_contribution_bias"] = bias
    return fields
