"""Turning other logit-lens results into this package's ``LogitLensResult``.

The released ``murano`` library's result has ``layer_indices`` instead of ``addresses`` and
always carries ``all_probs``; the reduced fields the widget shows are computed from it here.
"""

from __future__ import annotations

from typing import Any

import torch

from ._reductions import reduce_final, reduce_logits
from .result import LogitLensResult
from .types import RESID_POST, Node

_REQUIRED = ("max_probs", "predicted_tokens", "predicted_words", "input_words")


def as_lens_result(result: Any, tokenizer: Any = None, top_k: int = 5) -> LogitLensResult:
    """Returns ``result`` as a :class:`LogitLensResult` with the reduced fields filled in.

    Args:
        result: This package's result, or any object with ``max_probs``, ``predicted_tokens``,
            ``predicted_words``, ``input_words`` and ``addresses`` or ``layer_indices``
            (``attention_mask`` and ``all_probs`` are used when present).
        tokenizer: Decodes top-k tokens that the result's words do not cover.
        top_k: How many top tokens to derive from ``all_probs``.

    Raises:
        TypeError: Naming the attributes ``result`` lacks.
    """
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
    n_layers, n_inputs, seq = max_probs.shape
    addresses = getattr(result, "addresses", None)
    if addresses is None:
        addresses = [Node(int(i), RESID_POST) for i in result.layer_indices]
    mask = getattr(result, "attention_mask", None)
    mask = (
        torch.ones(n_inputs, seq, dtype=torch.long)
        if mask is None
        else torch.as_tensor(mask).long()
    )
    predicted = torch.as_tensor(result.predicted_tokens).long()
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
        # The highest row stands for the model's own output distribution.
        logits = torch.as_tensor(all_probs).float().clamp_min(1e-30).log()
        vocab = logits.shape[-1]
        k = min(top_k, vocab)
        flat = logits.reshape(n_layers, n_inputs * seq, vocab)
        final, last_fields = reduce_final(flat[-1], k, keep_probs=False)
        per_layer = [
            reduce_logits(flat[i], final, k, keep_probs=False) for i in range(n_layers - 1)
        ]
        per_layer.append(last_fields)
        for key in per_layer[0]:
            stacked = torch.stack([f[key] for f in per_layer])
            fields[key] = stacked.reshape(n_layers, n_inputs, seq, *stacked.shape[2:])
        fields["final_tokens"] = final.tokens.reshape(n_inputs, seq)
        fields["vocab_size"] = vocab
        unknown = sorted(set(fields["topk_tokens"].unique().tolist()) - set(words))
        if unknown and tokenizer is not None:
            decoded = tokenizer.batch_decode([[i] for i in unknown])
            words.update(zip(unknown, decoded, strict=True))
        for token in unknown:
            words.setdefault(token, f"#{token}")
    else:
        fields["final_tokens"] = predicted[-1]
    return LogitLensResult(
        # A murano result's all_probs is n_layers x seq x vocab: the fields above replace it.
        all_probs=result.all_probs if isinstance(result, LogitLensResult) else None,
        max_probs=max_probs,
        predicted_tokens=predicted,
        predicted_words=result.predicted_words,
        input_words=result.input_words,
        attention_mask=mask,
        addresses=list(addresses),
        prompts=getattr(result, "prompts", None),
        token_strings=words,
        model_name=getattr(result, "model_name", None),
        **fields,
    )
