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


class Scratch:
    """A reusable ``[rows, vocab]`` float32 buffer, so each layer does not allocate afresh."""

    def __init__(self) -> None:
        self._buffer: torch.Tensor | None = None

    def get(self, like: torch.Tensor) -> torch.Tensor:
        if self._buffer is None or self._buffer.shape != like.shape:
            self._buffer = torch.empty_like(like, dtype=torch.float32)
        return self._buffer


@dataclass
class FinalDistribution:
    """The model's own output distribution on a chunk of positions, kept while its layers run."""

    probs: torch.Tensor  # [rows, vocab] float32
    tokens: torch.Tensor  # [rows] the model's top-1 token
    neg_entropy: torch.Tensor  # [rows] sum p log p, in nats

    @classmethod
    def from_logits(cls, logits: torch.Tensor, scratch: Scratch | None = None) -> FinalDistribution:
        z = logits.detach().float()
        shifted = (scratch or Scratch()).get(z)
        peak, tokens = z.max(dim=-1, keepdim=True)
        torch.sub(z, peak, out=shifted)
        probs = torch.exp(shifted)
        total = probs.sum(dim=-1, keepdim=True)
        probs /= total
        log_norm = (peak + total.log()).squeeze(-1)
        return cls(probs, tokens.squeeze(-1), _rowdot(probs, z) - log_norm)


def fast_topk(z: torch.Tensor, k: int, group: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(z, k)`` along the last dim, for ``[rows, vocab]`` with a large vocabulary.

    torch's top-k costs several passes over each row; a vectorised max over groups of
    ``group`` tokens finds the ``k`` groups that hold the top ``k`` (a token outside them has
    ``k`` larger group maxima above it), and top-k runs on those few groups only.
    """
    rows, vocab = z.shape
    n_groups = vocab // group
    if n_groups < 4 * k:
        return torch.topk(z, k, dim=-1)
    body = z[:, : n_groups * group].unflatten(-1, (n_groups, group))
    best_groups = body.amax(dim=-1).topk(k, dim=-1).indices  # [rows, k]
    candidates = body.gather(1, best_groups.unsqueeze(-1).expand(rows, k, group)).flatten(1)
    offsets = torch.arange(group, device=z.device)
    ids = (best_groups.unsqueeze(-1) * group + offsets).flatten(1)
    tail = z[:, n_groups * group :]
    if tail.shape[-1]:
        candidates = torch.cat([candidates, tail], dim=-1)
        tail_ids = torch.arange(n_groups * group, vocab, device=z.device).expand(rows, -1)
        ids = torch.cat([ids, tail_ids], dim=-1)
    values, where = torch.topk(candidates, k, dim=-1)
    return values, ids.gather(-1, where)


def reduce_logits(
    logits: torch.Tensor,
    final: FinalDistribution,
    top_k: int,
    keep_probs: bool,
    scratch: Scratch | None = None,
) -> dict[str, torch.Tensor]:
    """Reduces one layer's logits on a chunk of positions to the per-cell fields.

    Written for few passes over ``[rows, vocab]``, each a vectorised kernel (row dot products
    as batched matmuls, the rank as a float sum of a comparison, exact below 2**24), and for
    little memory: one scratch buffer, and float32 ``logits`` are overwritten.

    Args:
        logits: ``[rows, vocab]`` logits of one layer (any float dtype); float32 logits are
            used as scratch space and overwritten.
        final: The model's own distribution at the same positions.
        top_k: How many of the most likely tokens to keep.
        keep_probs: Also return the full ``probs`` (only for ``store_full_probs``).
        scratch: Buffers to reuse across calls of the same chunk size.

    Returns:
        ``topk_tokens``/``topk_probs`` ``[rows, k]``, and ``entropy`` (bits),
        ``final_token_probs``, ``final_token_ranks``, ``kl_to_final`` (bits), each ``[rows]``;
        plus ``probs`` ``[rows, vocab]`` if ``keep_probs``.
    """
    # No autograd here: nnsight runs in-trace code on a thread where grad mode is on.
    z = logits.detach().float()
    shifted = (scratch or Scratch()).get(z)
    top_logits, topk_tokens = fast_topk(z, top_k)
    peak = top_logits[:, :1]
    final_logit = z.gather(-1, final.tokens.unsqueeze(-1))
    # Ties count in the token's favour, as argmax does: rank 0 iff it is (a) top-1.
    torch.gt(z, final_logit, out=shifted)
    final_token_ranks = shifted.sum(dim=-1).long()
    cross_logit = _rowdot(final.probs, z)  # sum p_f z
    torch.sub(z, peak, out=shifted)  # z - max
    weights = torch.exp(shifted, out=z)  # unnormalised probabilities, in z's memory
    total = weights.sum(dim=-1, keepdim=True)
    log_norm = (peak + total.log()).squeeze(-1)  # logsumexp(z)
    # H = logZ - sum p z = -sum p (z - max) + log(total), with p = weights / total.
    entropy = (total.squeeze(-1).log() - _rowdot(weights, shifted) / total.squeeze(-1)).clamp_min(
        0.0
    )
    # KL(final || layer) = sum p_f log p_f - sum p_f (z - logZ), and sum p_f = 1.
    kl_to_final = (final.neg_entropy - (cross_logit - log_norm)).clamp_min(0.0)
    fields = {
        "topk_tokens": topk_tokens,
        "topk_probs": torch.exp(top_logits - log_norm.unsqueeze(-1)),
        "entropy": entropy / _LOG2,
        "final_token_probs": torch.exp(final_logit.squeeze(-1) - log_norm),
        "final_token_ranks": final_token_ranks,
        "kl_to_final": kl_to_final / _LOG2,
    }
    if keep_probs:
        fields["probs"] = weights / total
    return fields


def _rowdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise dot product as a batched matmul (``vecdot`` would multiply, then sum)."""
    return torch.bmm(a.unsqueeze(1), b.unsqueeze(2)).reshape(a.shape[0])


def rows_per_chunk(max_chunk_bytes: int, vocab_size: int, n_rows: int) -> int:
    """Rows per chunk of float32 logits under the byte budget, with the chunks balanced.

    Balanced, because a last chunk of a few rows would stream the whole unembedding matrix for
    almost no work.
    """
    limit = max(1, int(max_chunk_bytes) // (4 * int(vocab_size)))
    n_chunks = -(-max(n_rows, 1) // limit)
    return -(-max(n_rows, 1) // n_chunks)
