"""Per-cell reductions of a chunk of logits: the small fields the lens keeps.

Everything here runs in float32 on ``[rows, vocab]`` logits and returns ``[rows]`` or
``[rows, k]`` tensors, so nothing of size ``vocab`` outlives a chunk (unless the caller asks for
the full probabilities).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_LOG2 = math.log(2.0)


@dataclass
class FinalDistribution:
    """The model's own output distribution on a chunk of positions, kept while its layers run."""

    logits: torch.Tensor  # [rows, vocab] float32
    probs: torch.Tensor  # [rows, vocab] float32
    tokens: torch.Tensor  # [rows] the model's top-1 token
    neg_entropy: torch.Tensor  # [rows] sum p log p, in nats

    @classmethod
    def from_logits(cls, logits: torch.Tensor) -> FinalDistribution:
        logits = logits.float()
        log_norm = torch.logsumexp(logits, dim=-1, keepdim=True)
        probs = torch.exp(logits - log_norm)
        neg_entropy = _rowdot(probs, logits) - log_norm.squeeze(-1)
        return cls(logits, probs, logits.argmax(dim=-1), neg_entropy)


def reduce_logits(
    logits: torch.Tensor, final: FinalDistribution, top_k: int, keep_probs: bool
) -> dict[str, torch.Tensor]:
    """Reduces one layer's logits on a chunk of positions to the per-cell fields.

    Args:
        logits: ``[rows, vocab]`` logits of one layer (any float dtype).
        final: The model's own distribution at the same positions.
        top_k: How many of the most likely tokens to keep.
        keep_probs: Also return the full ``probs`` (only for ``store_full_probs``).

    Returns:
        ``topk_tokens``/``topk_probs`` ``[rows, k]``, and ``entropy`` (bits),
        ``final_token_probs``, ``final_token_ranks``, ``kl_to_final`` (bits), each ``[rows]``;
        plus ``probs`` ``[rows, vocab]`` if ``keep_probs``.
    """
    logits = logits.float()
    log_norm = torch.logsumexp(logits, dim=-1, keepdim=True)
    top_logits, topk_tokens = torch.topk(logits, top_k, dim=-1)
    final_logit = logits.gather(-1, final.tokens.unsqueeze(-1))
    # Ties count in the token's favour, as argmax does: rank 0 iff it is (a) top-1.
    final_token_ranks = (logits > final_logit).sum(dim=-1)
    # KL(final || layer) = sum p_f log p_f - sum p_f (z - logZ), and sum p_f = 1.
    cross = _rowdot(final.probs, logits) - log_norm.squeeze(-1)
    kl_to_final = (final.neg_entropy - cross).clamp_min(0.0) / _LOG2
    probs = torch.exp(logits - log_norm)
    entropy = (log_norm.squeeze(-1) - _rowdot(probs, logits)).clamp_min(0.0) / _LOG2
    fields = {
        "topk_tokens": topk_tokens,
        "topk_probs": torch.exp(top_logits - log_norm),
        "entropy": entropy,
        "final_token_probs": torch.exp(final_logit - log_norm).squeeze(-1),
        "final_token_ranks": final_token_ranks,
        "kl_to_final": kl_to_final,
    }
    if keep_probs:
        fields["probs"] = probs
    return fields


def _rowdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise dot product without a ``[rows, vocab]`` temporary."""
    return torch.linalg.vecdot(a, b, dim=-1)


def rows_per_chunk(max_chunk_bytes: int, vocab_size: int) -> int:
    """How many positions fit in one chunk of float32 logits under the byte budget."""
    return max(1, int(max_chunk_bytes) // (4 * int(vocab_size)))
