"""Direct logit attribution on a result, made up for the widget's tests (no model is run).

The step's ``decompose=True`` (issue 23, ``/work/notes/dla_spec.md``) adds to a
``LogitLensResult`` the fields the "why" panel and the component view read; sites
``("resid_mid", "resid_post")`` add a row after each block's attention. These helpers give any
result those fields and rows, with made-up numbers that keep the contract's invariants, so the
payload, the front end and the export are tested whether or not the step computes them:

- :func:`decompose`: ``component_labels`` (``"embed"``, then ``"L{l}.attn"``/``"L{l}.mlp"``, or
  with heads ``"L{l}.H{h}"`` and ``"L{l}.attn_bias"``), ``contributions`` ``[rows, prompts, seq,
  C]`` (NaN for components after the row's point and at padding), ``contribution_bias``,
  ``top1_logits`` (= ``nansum(contributions) + contribution_bias``), ``answer_row_contributions``
  and ``answer_row_bias`` (with answers), ``target_contributions`` and ``target_bias`` (with
  targets), ``logit_softcap`` and ``foils``;
- :func:`with_sublayers`: the same result with a ``resid_mid`` row before each row.

The fields are set on the instance (``setattr``), so they work before and after
``LogitLensResult`` declares them.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import torch

from murano_widgets.results.result import LogitLensResult
from murano_widgets.types import Node

RESID_MID = "resid_mid"

#: Per-row fields of a result (leading axis = rows), for :func:`with_sublayers`.
ROW_FIELDS = (
    "max_probs",
    "predicted_tokens",
    "topk_tokens",
    "topk_probs",
    "entropy",
    "final_token_probs",
    "final_token_ranks",
    "kl_to_final",
    "target_probs",
    "target_ranks",
    "all_probs",
)


def component_labels(n_model_layers: int, heads: int | None = None) -> list[str]:
    """The contract's component labels, in model order."""
    labels = ["embed"]
    for layer in range(n_model_layers):
        if heads:
            labels += [f"L{layer}.H{h}" for h in range(heads)] + [f"L{layer}.attn_bias"]
        else:
            labels.append(f"L{layer}.attn")
        labels.append(f"L{layer}.mlp")
    return labels


def _point(label: str) -> tuple[int, int]:
    """Where a component writes: ``(layer, 0)`` for attention, ``(layer, 1)`` for the MLP."""
    if label == "embed":
        return (-1, 1)
    layer, part = label[1:].split(".", 1)
    return (int(layer), 1 if part == "mlp" else 0)


def _row_point(node: Node) -> tuple[int, int]:
    return (node.layer, 0 if node.module == RESID_MID else 1)


def present(labels: list[str], node: Node) -> np.ndarray:
    """Which components a row's residual stream holds (those at or before its point)."""
    point = _row_point(node)
    return np.array([_point(label) <= point for label in labels])


def decompose(
    result: LogitLensResult,
    *,
    heads: int | None = None,
    n_model_layers: int | None = None,
    softcap: float | None = None,
    foils: list[str | None] | None = None,
    seed: int = 0,
) -> LogitLensResult:
    """Gives ``result`` (in place, and returns it) made-up attribution fields of the contract.

    Args:
        result: Any result; its rows' addresses say which components each row holds.
        heads: Heads per layer (components per head), or ``None`` (one per attention).
        n_model_layers: The model's depth (default the result's, else its highest layer + 1).
        softcap: The ``logit_softcap`` to record.
        foils: The ``foils`` to record (answers then become differences: only the field's
            meaning changes, not its shape).
        seed: For the numbers.
    """
    rng = np.random.default_rng(seed)
    depth = n_model_layers or result.n_model_layers or (max(result.layers) + 1)
    labels = component_labels(depth, heads)
    C = len(labels)
    R, B, S = result.max_probs.shape
    mask = result.attention_mask.bool().numpy()
    holds = np.stack([present(labels, node) for node in result.addresses])  # [R, C]
    # Later components write more; each head a part of its layer's attention.
    weight = np.array([0.6 + 0.4 * (_point(label)[0] + 1) for label in labels])
    if heads:
        weight = np.where([".H" in label for label in labels], weight / np.sqrt(heads), weight)

    def cells(*shape: int) -> tuple[np.ndarray, np.ndarray]:
        """Contributions ``[R, *shape, C]`` and a bias ``[R, *shape]`` (NaN where not held)."""
        values = rng.normal(0.0, 1.0, (R, *shape, C)) * weight
        values[..., -1] += 2.5  # the last MLP pushes the token up (when the row holds it)
        held = holds.reshape(R, *([1] * len(shape)), C)
        values = np.where(held, values, np.nan).astype(np.float32)
        bias = rng.normal(0.0, 0.3, (R, *shape)).astype(np.float32)
        return values, bias

    contributions, bias = cells(B, S)
    contributions[:, ~mask] = np.nan
    bias[:, ~mask] = np.nan
    result.component_labels = labels
    result.contributions = torch.from_numpy(contributions)
    result.contribution_bias = torch.from_numpy(bias)
    result.top1_logits = torch.from_numpy(
        (np.nansum(contributions, axis=-1) + bias).astype(np.float32)
    )
    result.top1_logits[:, ~torch.from_numpy(mask)] = float("nan")
    if result.answer_sets:
        values, answer_bias = cells(B)
        without = [a is None for a in next(iter(result.answer_sets.values())).answers]
        values[:, without] = np.nan
        answer_bias[:, without] = np.nan
        result.answer_row_contributions = torch.from_numpy(values)
        result.answer_row_bias = torch.from_numpy(answer_bias)
    if result.targets:
        n_targets = len(result.targets)
        values, target_bias = cells(B, S, n_targets)
        values[:, ~mask] = np.nan
        target_bias[:, ~mask] = np.nan
        result.target_contributions = torch.from_numpy(values)
        result.target_bias = torch.from_numpy(target_bias)
    result.logit_softcap = softcap
    result.foils = foils
    return result


def with_sublayers(result: LogitLensResult) -> LogitLensResult:
    """A copy of ``result`` with a ``resid_mid`` row before each row (``sites=("resid_mid",
    "resid_post")``): the mid row of layer ``l`` repeats the row below it (row 0's: itself), so
    its numbers lie between two block outputs as a real one's would."""
    out = copy.copy(result)
    index = []
    for i in range(len(result.addresses)):
        index += [max(0, i - 1), i]
    rows = torch.tensor(index)
    out.addresses = [
        Node(node.layer, module) for node in result.addresses for module in (RESID_MID, node.module)
    ]
    for name in ROW_FIELDS:
        value = getattr(result, name, None)
        if value is not None:
            setattr(out, name, value.index_select(0, rows).clone())
    out.predicted_words = [result.predicted_words[i] for i in index]
    if result.answer_sets:
        out.answer_sets = {
            name: dataclasses.replace(
                scores,
                probs=scores.probs.index_select(0, rows).clone(),
                ranks=scores.ranks.index_select(0, rows).clone(),
                token_probs=scores.token_probs.index_select(0, rows).clone(),
                token_ranks=scores.token_ranks.index_select(0, rows).clone(),
            )
            for name, scores in result.answer_sets.items()
        }
    return out.validate()
