"""Evaluating a lens: how far each layer's reading is from the model's own final distribution.

Through the step itself (:class:`~murano_widgets.LogitLens`'s ``kl_to_final``, in bits, and its
top-1 against the model's own ``final_tokens``), so the numbers are the ones the widget shows,
not a second computation of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from murano_widgets._checks import check_int, check_model
from murano_widgets.lenses.base import Lens
from murano_widgets.results.result import LogitLensResult
from murano_widgets.step.logit_lens import LogitLens
from murano_widgets.types import check_encodable

__all__ = ["per_layer_kl", "per_layer_metrics"]

DEFAULT_MAX_CHUNK_BYTES = 128 * 2**20


def per_layer_kl(
    model: Any,
    texts: Sequence[str],
    lens: Lens | None = None,
    *,
    batch_size: int = 64,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
) -> list[float]:
    """Mean KL(final distribution ‖ lens distribution) per block output over ``texts``' tokens,
    in bits: the step's own ``kl_to_final``, averaged.

    Each text is read on its own (tokenized without special tokens, as the lens step does),
    and every token of every text counts once. The last block's output is the final
    distribution, so its KL is 0. Texts are batched by length (less padding) and run through
    :class:`~murano_widgets.LogitLens` (its chunked reductions, ``max_chunk_bytes`` of float32
    logits at a time), so this is the number the widget shows, not a second computation of it.

    Args:
        model: The model.
        texts: Held-out text.
        lens: A :class:`~murano_widgets.Lens` (a :class:`TunedLens`), or ``None`` for the logit
            lens.
        batch_size: Texts per forward pass.
        max_chunk_bytes: The size of one chunk of float32 logits.

    Returns:
        ``n_layers`` floats, in bits.

    Raises:
        TypeError: If ``model`` is not a loaded model.
        ValueError: For a ``batch_size`` or ``max_chunk_bytes`` that is not a positive int,
            texts that are not strings of valid Unicode, or texts that hold no tokens.
    """
    return per_layer_metrics(
        model, texts, lens, batch_size=batch_size, max_chunk_bytes=max_chunk_bytes
    )["kl"]


def per_layer_metrics(
    model: Any,
    texts: Sequence[str],
    lens: Lens | None = None,
    *,
    batch_size: int = 64,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
) -> dict[str, list[float]]:
    """Per block output over ``texts``' tokens, in one pass of the step: ``"kl"``, the mean
    KL(final ‖ lens) in bits (:func:`per_layer_kl`), and ``"top1"``, the share of tokens whose
    lens top-1 is the model's own final prediction (1.0 at the last layer).

    Args and Raises: as :func:`per_layer_kl`.
    """
    check_model(model)
    batch_size = check_int("batch_size", batch_size, 1, None, None)
    max_chunk_bytes = check_int("max_chunk_bytes", max_chunk_bytes, 1, None, None)
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValueError(f"texts must be a list of strings, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{index}] is {type(text).__name__}, not a string")
        check_encodable(text, f"texts[{index}]")
    step = LogitLens(model, lens=lens, top_k=1, max_chunk_bytes=max_chunk_bytes)
    encoded = [
        (text, ids)
        for text, ids in zip(
            texts, model.tokenizer(list(texts), add_special_tokens=False)["input_ids"], strict=True
        )
        if ids
    ]
    if not encoded:
        raise ValueError("texts hold no tokens")
    encoded.sort(key=lambda pair: len(pair[1]))
    n_layers = int(model.n_layers)
    totals = torch.zeros(n_layers, dtype=torch.float64)
    agree = torch.zeros(n_layers, dtype=torch.float64)
    count = 0
    for start in range(0, len(encoded), batch_size):
        batch = encoded[start : start + batch_size]
        result = step.run([text for text, _ in batch], prompt_ids=[ids for _, ids in batch])
        # One lens, not a mapping of them: one result, whose final-based fields the step fills
        # in whenever it reads the last layer (it always does).
        assert isinstance(result, LogitLensResult)
        assert result.kl_to_final is not None and result.final_tokens is not None
        real = result.attention_mask.bool()
        totals += result.kl_to_final[:, real].double().sum(dim=1)
        same = result.predicted_tokens[:, real] == result.final_tokens[real].unsqueeze(0)
        agree += same.double().sum(dim=1)
        count += int(real.sum())
    totals[-1] = 0.0  # the final distribution against itself
    return {"kl": (totals / count).tolist(), "top1": (agree / count).tolist()}
