"""``component_outputs``: the terms a model adds to its residual stream, as vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nnsight
import torch

from murano_widgets._checks import check_bool, check_model
from murano_widgets.attribution.components import ComponentLayout, Components
from murano_widgets.types import validate_prompts

__all__ = ["component_outputs"]


def component_outputs(model: Any, prompts: Sequence[str], *, heads: bool = False) -> Components:
    """The exact terms each block adds to the residual stream, on a batch of prompts.

    One trace. The embedding (tokens, and positions where the model adds them), each
    attention's and each MLP's output as it joins the stream (after any norm after the
    sublayer, as in Gemma 2), and with ``heads=True`` each head's share of the attention (its
    slice of the output projection's input times its columns of the projection) and the
    projection's bias. The embedding plus every term up to a block is that block's output.

    Args:
        model: The model (a :class:`~murano_widgets.MuranoModel`).
        prompts: The prompts.
        heads: Split each attention into its heads and its bias.

    Returns:
        :class:`~murano_widgets.attribution.Components`: ``labels`` and ``vectors``
        ``[n_inputs, seq, n_components, d_model]`` (0 at padding), and the blocks' outputs.

    Raises:
        TypeError, ValueError: For bad arguments, or an architecture whose blocks this package
            cannot split (naming it), before any model work.
    """
    from murano_widgets.step.inputs import plan_inputs
    from murano_widgets.step.trace import flatten_states, model_inputs

    check_model(model)
    prompts = validate_prompts(prompts)
    heads = check_bool("heads", heads)
    layout = ComponentLayout(model, heads, wanted="component_outputs")
    plan = plan_inputs(model.tokenizer, prompts, None, None, False)
    inputs = model_inputs(model, plan)
    last = int(model.n_layers) - 1
    saved: dict[str, Any] = {}
    kwargs = {"use_cache": False} if "use_cache" in model.forward_kwargs else {}
    with torch.inference_mode(), model.trace(dict(inputs), **kwargs):
        layout.read(model, last, set(), nnsight.save, saved)
    states = flatten_states(saved)
    n_inputs, seq = plan.attention_mask.shape
    rows = torch.arange(n_inputs * seq, device=states["embed"].device)
    with torch.inference_mode():
        parts = [states["embed"].float().unsqueeze(1)]
        for layer in range(last + 1):
            attention, mlp = layout.terms(states, rows, layer)
            if heads:
                parts.append(layout.head_vectors(states, rows, layer))
            else:
                parts.append(attention.unsqueeze(1))
            parts.append(mlp.unsqueeze(1))
        vectors = torch.cat(parts, dim=1).view(n_inputs, seq, layout.n_components, -1)
        mask = plan.attention_mask.bool().to(vectors.device)
        vectors = vectors.masked_fill(~mask[..., None, None], 0.0).cpu()
        outputs = torch.stack(
            [states["post"][layer].float().view(n_inputs, seq, -1) for layer in range(last + 1)]
        ).cpu()
    return Components(layout.labels, vectors, plan.attention_mask.long(), outputs)
