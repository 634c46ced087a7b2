"""The direct logit attribution's part of the heatmap's payload, and the rows' addresses.

A result of ``LogitLens(model, decompose=True)`` carries each component's part of a logit
(:data:`murano_widgets.metrics.ATTRIBUTION_SECTIONS`): the "why" panel and the component view
read them. They go, per lens, with the detail sections, flattened to real positions like every
cell section (``[L, T, ...]``), as float32. The metadata gains what they need, and only then:

- ``meta["components"]``: the components' labels in model order (``"embed"``, ``"L0.attn"``,
  ``"L0.mlp"``, ...; with heads ``"L0.H0"``, ..., ``"L0.attn_bias"``), the last axis of every
  attribution section;
- ``meta["logit_softcap"]``: the final soft-cap the logits stop before (Gemma 2), or absent;
- ``meta["foils"]``: each prompt's foil (the answer's contributions are then the answer's minus
  the foil's), or absent.

A result with rows other than block outputs (``sites=("resid_mid", "resid_post")``) adds
``meta["addresses"]``: each row's address, ``"L3.resid_mid"``, ``"L3.resid_post"``, ... (its
``layers`` then repeat a layer). A result of block outputs alone sends none, as before.

The answer's attribution goes at every cell (``answer_token_contributions`` and its bias); a
result that has only its last-position slice (``answer_row_*``, made before the step attributed
every cell) sends that instead, and the front end explains the answer where each prompt ends.

The fields are read with ``getattr(result, name, None)``: a result that does not declare them
(made before decomposition existed) has none, and its payload is what it always was.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from murano_widgets.metrics import ATTRIBUTION_SECTIONS

__all__ = [
    "EXPLAIN_ANSWER",
    "EXPLAIN_TARGET",
    "EXPLAIN_TOP1",
    "attribution_arrays",
    "attribution_meta",
    "explain_choices",
    "has_attribution",
    "row_addresses",
]

#: Shapes whose second axis is the flattened positions (``T``); the others' is the prompts.
_CELL_SHAPES = ("cell", "cell_component", "cell_target", "cell_target_component")
#: Sections left out when the result has the one named: the answer at the last position is the
#: answer at every cell's last-position slice, which the front end reads there. A result with
#: only the last position's (made before the step attributed every cell) still sends it.
_SUPERSEDED_BY = {
    "answer_row_contributions": "answer_token_contributions",
    "answer_row_bias": "answer_token_bias",
}
#: The row address of a block output: a result of these alone sends no addresses.
_BLOCK_OUTPUT = "resid_post"


def attribution_arrays(
    result: Any, batch_index: np.ndarray, position_index: np.ndarray
) -> dict[str, np.ndarray]:
    """The attribution sections ``result`` has, over its real positions, as float32.

    Args:
        result: A ``LogitLensResult`` (any object with the fields).
        batch_index, position_index: The real cells' prompt and sequence indices, in the
            payload's position order.
    """
    arrays = {}
    for name, section in ATTRIBUTION_SECTIONS.items():
        tensor = getattr(result, name, None)
        if tensor is None or getattr(result, _SUPERSEDED_BY.get(name, ""), None) is not None:
            continue
        array = np.asarray(tensor.detach().cpu().float().numpy(), dtype=np.float32)
        if section.shape in _CELL_SHAPES:
            array = array[:, batch_index, position_index]
        arrays[name] = np.ascontiguousarray(array)
    return arrays


def attribution_meta(results: list[Any]) -> dict[str, Any]:
    """The metadata keys the attribution sections need, from the first result that has them
    (the components are the model's, the same under every lens); ``{}`` when none has."""
    source = next((r for r in results if getattr(r, "component_labels", None)), None)
    if source is None:
        return {}
    meta: dict[str, Any] = {"components": [str(label) for label in source.component_labels]}
    softcap = getattr(source, "logit_softcap", None)
    if softcap is not None:
        meta["logit_softcap"] = float(softcap)
    foils = getattr(source, "foils", None)
    if foils is not None and any(foil is not None for foil in foils):
        meta["foils"] = [None if foil is None else str(foil) for foil in foils]
    return meta


def row_addresses(result: Any) -> list[str] | None:
    """Each row's address (``"L3.resid_mid"``), or ``None`` when every row is a block output."""
    if all(node.module == _BLOCK_OUTPUT for node in result.addresses):
        return None
    return [str(node) for node in result.addresses]


#: What the "why" panel and the component view explain (the widget's ``explain`` trait): the
#: cell's top-1 token, the first answer set's answer (its first token as the cell's next token,
#: minus the foil's, with foils; a result with only ``answer_row_*``: at the prompt's last
#: position), or a target, as ``"target:"`` and its text.
EXPLAIN_TOP1, EXPLAIN_ANSWER, EXPLAIN_TARGET = "top1", "answer", "target:"


def explain_choices(result: Any) -> list[str]:
    """The ``explain`` values ``result`` can show: ``"top1"`` always, ``"answer"`` with the
    answer's attribution, ``"target:<text>"`` for each target with the targets'."""
    choices = [EXPLAIN_TOP1]
    if any(
        getattr(result, name, None) is not None
        for name in ("answer_token_contributions", "answer_row_contributions")
    ):
        choices.append(EXPLAIN_ANSWER)
    if getattr(result, "target_contributions", None) is not None:
        choices += [EXPLAIN_TARGET + target for target in result.targets or []]
    return choices


def has_attribution(result: Any) -> bool:
    """Whether ``result`` has the direct logit attribution (``decompose=True``)."""
    return getattr(result, "contributions", None) is not None
