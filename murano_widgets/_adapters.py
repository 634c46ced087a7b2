"""Turning other logit-lens results into this package's ``LogitLensResult``.

The released ``murano`` library's result has ``layer_indices`` instead of ``addresses`` and
always carries ``all_probs``; the reduced fields the widget shows are computed from it here.
"""

from __future__ import annotations

from typing import Any

import torch

from murano_widgets.results.lenses import one_lens
from murano_widgets.results.result import LogitLensResult
from murano_widgets.step.reductions import reduce_layers, stack_layers
from murano_widgets.step.token_strings import decode_unique
from murano_widgets.types import RESID_POST, Node

_REQUIRED = ("max_probs", "predicted_tokens", "predicted_words", "input_words")


def as_lens_result(
    result: Any, tokenizer: Any = None, top_k: int = 5, n_model_layers: int | None = None
) -> LogitLensResult:
    """Returns ``result`` as a :class:`LogitLensResult` with the reduced fields filled in.

    Args:
        result: This package's result, or any object with ``max_probs``, ``predicted_tokens``,
            ``predicted_words``, ``input_words`` and ``addresses`` (``Node``s or strings such
            as ``"L5.resid_post"``) or ``layer_indices`` (``attention_mask`` and ``all_probs``
            are used when present).
        tokenizer: Decodes top-k tokens that the result's words do not cover.
        top_k: How many top tokens to derive from ``all_probs``.
        n_model_layers: The depth of the model that made ``result``. A released ``murano``
            result does not record it, so its highest row need not be the model's output: the
            final-based fields (probability and rank of the final prediction, KL to it) are
            derived only when the result holds layer ``n_model_layers - 1``, and are ``None``
            otherwise.

    Raises:
        TypeError: Naming the attributes ``result`` lacks.
        ValueError: For addresses that are not nodes, or shapes that disagree.
    """
    result = one_lens(result, "draw them all with results.plot()")
    missing = [name for name in _REQUIRED if not hasattr(result, name)]
    if not hasattr(result, "addresses") and not hasattr(result, "layer_indices"):
        missing.append("addresses (or layer_indices)")
    if missing:
        raise TypeError(
            "result must be a LogitLensResult (from LogitLens) or a murano logit-lens result; "
            f"{type(result).__name__} lacks {', '.join(missing)}"
        )
    if isinstance(result, LogitLensResult) and result.final_tokens is not None:
        return result
    max_probs = torch.as_tensor(result.max_probs).float()
    if max_probs.dim() != 3:
        raise ValueError(
            f"result.max_probs must be [n_layers, n_inputs, seq], got shape {tuple(max_probs.shape)}"
        )
    n_layers, n_inputs, seq = max_probs.shape
    addresses = _addresses(result)
    layers = [node.layer for node in addresses]
    if n_model_layers is None:
        n_model_layers = getattr(result, "n_model_layers", None)
    final_row = (
        layers.index(n_model_layers - 1)
        if n_model_layers is not None and n_model_layers - 1 in layers
        else None
    )
    mask = getattr(result, "attention_mask", None)
    mask = (
        torch.ones(n_inputs, seq, dtype=torch.long)
        if mask is None
        else torch.as_tensor(mask).long()
    )
    predicted = torch.as_tensor(result.predicted_tokens).long()
    if tuple(predicted.shape) != (n_layers, n_inputs, seq):
        raise ValueError(
            f"result.predicted_tokens has shape {tuple(predicted.shape)}, but max_probs has "
            f"{(n_layers, n_inputs, seq)}"
        )
    probe = LogitLensResult(
        None, max_probs, predicted, result.predicted_words, result.input_words, mask, addresses
    )
    probe.validate()  # ragged word lists fail here, naming the field, not later in a plot
    words = {
        int(token): word
        for token, word in zip(
            predicted.reshape(-1).tolist(),
            (w for layer in result.predicted_words for row in layer for w in row),
            strict=True,
        )
    }
    fields: dict[str, Any] = {}
    all_probs = getattr(result, "all_probs", None)
    if all_probs is not None:
        logits = torch.as_tensor(all_probs).float().clamp_min(1e-30).log()
        vocab = logits.shape[-1]
        k = min(top_k, vocab)
        flat = logits.reshape(n_layers, n_inputs * seq, vocab)
        per_layer, final = reduce_layers(
            lambda row: flat[row], list(range(n_layers)), final_row, k, keep_probs=False
        )
        for key, stacked in stack_layers(per_layer).items():
            fields[key] = stacked.reshape(n_layers, n_inputs, seq, *stacked.shape[2:])
        if final is not None:
            fields["final_tokens"] = final.predictions.reshape(n_inputs, seq)
        fields["vocab_size"] = vocab
        unknown = sorted(set(fields["topk_tokens"].unique().tolist()) - set(words) - {-1})
        if unknown and tokenizer is not None:
            # Decoded as the step decodes (a split character's bytes as <0xE6>, ids kept).
            words.update(decode_unique(tokenizer, [torch.tensor(unknown)]))
        for token in unknown:
            words.setdefault(token, f"#{token}")
    elif final_row is not None:
        fields["final_tokens"] = predicted[final_row]
    return LogitLensResult(
        # A murano result's all_probs is n_layers x seq x vocab: the fields above replace it.
        all_probs=result.all_probs if isinstance(result, LogitLensResult) else None,
        max_probs=max_probs,
        predicted_tokens=predicted,
        predicted_words=result.predicted_words,
        input_words=result.input_words,
        attention_mask=mask,
        addresses=addresses,
        prompts=getattr(result, "prompts", None),
        token_strings=words,
        model_name=getattr(result, "model_name", None),
        n_model_layers=n_model_layers,
        lens_kind=getattr(result, "lens_kind", None) or "logit",
        **fields,
    )


def _addresses(result: Any) -> list[Node]:
    """The result's rows as nodes: ``Node``s, strings like ``"L5.resid_post"``, or layer ids."""
    addresses = getattr(result, "addresses", None)
    if addresses is None:
        return [Node(int(i), RESID_POST) for i in result.layer_indices]
    nodes = []
    for index, address in enumerate(addresses):
        if isinstance(address, Node):
            nodes.append(address)
        elif isinstance(address, str):
            nodes.append(Node.parse(address))
        else:
            raise ValueError(
                f"result.addresses[{index}] must be a Node or a string like 'L5.resid_post', "
                f"got {type(address).__name__} {address!r}"
            )
    return nodes
