"""Per-cell reductions of a chunk of logits: the small fields the lens keeps.

Everything here runs in float32 on ``[rows, vocab]`` logits and returns ``[rows]`` or
``[rows, k]`` tensors, so nothing of size ``vocab`` outlives a chunk (unless the caller asks for
the full probabilities).

Each layer costs a handful of passes over its logits, each one vectorised kernel: a grouped
top-k, a comparison count for the rank, two row dot products and one fused softmax. Given
:class:`Buffers`, the passes write into reused memory: a fresh ``[rows, vocab]`` tensor costs
page faults on first touch that take about as long as a pass (the unembedding matmul into a
reused buffer runs about 8 % faster for the same reason).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from murano_widgets.metrics import METRICS, SECTIONS, missing_value
from murano_widgets.step.groups import PromptRows, group_probs, logit_difference

_LOG2 = math.log(2.0)
# Below this many columns the large-vocabulary kernels (a grouped top-k, a BLAS call per row)
# cost more in overhead than they save.
_LARGE_VOCAB = 8192
# Entries per block of the small-vocabulary row dot product (a 1 MB temporary).
_ROWDOT_BLOCK = 1 << 18
# What names a row of layers in reduce_lenses: a block index, or a Node before a block. The
# loop only compares and passes them on, so any hashable key works.
Row = TypeVar("Row", bound=Hashable)


class Buffers:
    """Reusable float32 ``[rows, vocab]`` buffers, one per role, sized for the largest chunk."""

    def __init__(self) -> None:
        self._store: dict[str, torch.Tensor] = {}

    def get(
        self,
        role: str,
        rows: int,
        vocab: int,
        device: torch.device | str,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        """A ``[rows, vocab]`` view of the buffer for ``role`` (contents undefined)."""
        buffer = self._store.get(role)
        if (
            buffer is None
            or buffer.shape[0] < rows
            or buffer.shape[1] != vocab
            or buffer.device != torch.device(device)
            or buffer.dtype != dtype
        ):
            self._store.pop(role, None)  # let the old one go before the new one is made
            buffer = self._store[role] = torch.empty(rows, vocab, device=device, dtype=dtype)
        return buffer[:rows]

    def like(self, role: str, z: torch.Tensor) -> torch.Tensor:
        return self.get(role, z.shape[0], z.shape[1], z.device)


@dataclass
class FinalDistribution:
    """The model's own output distribution on a chunk of positions, kept while its layers run."""

    probs: torch.Tensor  # [rows, vocab] float32
    tokens: torch.Tensor  # [rows] the model's top-1 token (0 where not valid: a safe index)
    neg_entropy: torch.Tensor  # [rows] sum p log p, in nats
    valid: torch.Tensor  # [rows] bool: False where the final logits were not finite

    @property
    def predictions(self) -> torch.Tensor:
        """The model's top-1 token per row, -1 where the final distribution is not finite."""
        return self.tokens.masked_fill(~self.valid, -1)

    def tiled(self, times: int) -> FinalDistribution:
        """The same distribution for ``times`` layers' rows stacked (layer after layer): the
        per-row fields repeated, ``probs`` shared (:func:`_rowdot` reads it for each layer)."""
        if times == 1:
            return self
        return FinalDistribution(
            self.probs,
            self.tokens.repeat(times),
            self.neg_entropy.repeat(times),
            self.valid.repeat(times),
        )


@dataclass
class Tracked:
    """Token ids whose probability and rank each row keeps: targets and answers.

    Attributes:
        target_ids: ``[n]`` ids tracked at every row (the targets' tokens; may be empty).
        row_ids: ``[rows, a]`` ids tracked per row (the answers' tokens), -1 where a row has
            fewer than ``a``; or ``None``.
        id_rows: The rows that track any id, when not all do (their ranks alone are counted);
            ``None`` when all do. Filled in from ``row_ids``.
        groups: Token groups whose summed probability each row keeps (``group_probs``), or
            ``None`` (:mod:`murano_widgets.step.groups`).
        pairs: An answer and a foil token per row, whose logit difference each row keeps
            (``logit_diff``), or ``None``.
    """

    target_ids: torch.Tensor
    row_ids: torch.Tensor | None = None
    id_rows: torch.Tensor | None = None
    groups: PromptRows | None = None
    pairs: PromptRows | None = None

    def __post_init__(self) -> None:
        if self.row_ids is not None and self.id_rows is None:
            has = (self.row_ids >= 0).any(dim=1)
            if not bool(has.all()):
                self.id_rows = torch.nonzero(has).squeeze(1)

    def rows(self, start: int, stop: int) -> Tracked:
        """The same ids for rows ``start:stop`` of the chunk's rows."""
        row_ids = None if self.row_ids is None else self.row_ids[start:stop]
        return Tracked(self.target_ids, row_ids, None, *self._each(lambda t: t.rows(start, stop)))

    def _each(self, change: Callable[[PromptRows], PromptRows]) -> list[PromptRows | None]:
        return [None if t is None else change(t) for t in (self.groups, self.pairs)]

    def to(self, device: torch.device | str) -> Tracked:
        row_ids = None if self.row_ids is None else self.row_ids.to(device)
        id_rows = None if self.id_rows is None else self.id_rows.to(device)
        return Tracked(
            self.target_ids.to(device), row_ids, id_rows, *self._each(lambda t: t.to(device))
        )

    def tiled(self, times: int) -> Tracked:
        """The same ids for ``times`` layers' rows stacked, layer after layer."""
        if times == 1 or (self.row_ids is None and self.groups is None and self.pairs is None):
            return self
        row_ids = None if self.row_ids is None else self.row_ids.repeat(times, 1)
        return Tracked(self.target_ids, row_ids, None, *self._each(lambda t: t.tiled(times)))


#: What a cell holds when it has no value (padding, or a distribution that was not finite), by
#: the field a row's reduction writes it to: its payload section's (-1 for ids and ranks, else
#: NaN: :func:`murano_widgets.metrics.missing_value`). The answers' tokens tracked per row
#: (``row_token_*``, which :func:`~murano_widgets.step.inputs.score` turns into the answer
#: fields) are filled as those fields are.
#: (Read from the metric registry, not the result class: ``_adapters`` reads this module, and
#: the result's ``plot`` reads ``_adapters``.)
MISSING: dict[str, float] = {name: missing_value(section) for name, section in SECTIONS.items()}
MISSING.update(
    row_token_probs=MISSING["answer_token_probs"], row_token_ranks=MISSING["answer_token_ranks"]
)
#: The fields measured against the model's own final distribution: the registry's final-based
#: metrics (:data:`murano_widgets.metrics.METRICS`).
FINAL_BASED = tuple(m.field for m in METRICS.values() if m.reduced and m.final_based)
#: The fields of a row's own distribution (as opposed to those measured against the final one).
OWN_FIELDS = tuple(name for name in MISSING if name not in FINAL_BASED)


def fast_topk(z: torch.Tensor, k: int, group: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(z, k)`` along the last dim, for ``[rows, vocab]`` logits.

    torch's top-k costs several passes over each row; a vectorised max over groups of
    ``group`` tokens finds the ``k`` groups that hold the top ``k`` (a token outside them has
    ``k`` larger group maxima above it), and top-k runs on those few groups only. The values
    and ids are torch's, except that among exactly equal logits the ids may name the tied
    tokens in another order (torch.topk promises no order there either).
    """
    rows, vocab = z.shape
    n_groups = vocab // group
    if n_groups < 4 * k:
        return torch.topk(z, k, dim=-1)
    offsets = torch.arange(group, device=z.device)
    if vocab % group == 0 and z.is_contiguous():
        # Whole groups, one row after another: the best groups are rows of a [rows * groups,
        # group] view, copied by one index_select, 1.4x faster than torch.topk on the demo
        # model's [3781, 1536] (3.8 against 5.4 ms at 2 threads), where gather was 3x slower.
        body = z.view(rows, n_groups, group)
        best_groups = body.amax(dim=-1).topk(k, dim=-1).indices  # [rows, k]
        picked = best_groups + n_groups * torch.arange(rows, device=z.device).unsqueeze(1)
        candidates = body.view(rows * n_groups, group).index_select(0, picked.flatten())
        candidates = candidates.view(rows, k * group)
        ids = (best_groups.unsqueeze(-1) * group + offsets).flatten(1)
    elif vocab < _LARGE_VOCAB:
        # A gather over a partial last group is slower than torch's top-k on small rows.
        return torch.topk(z, k, dim=-1)
    else:
        body = z[:, : n_groups * group].unflatten(-1, (n_groups, group))
        best_groups = body.amax(dim=-1).topk(k, dim=-1).indices  # [rows, k]
        candidates = body.gather(1, best_groups.unsqueeze(-1).expand(rows, k, group)).flatten(1)
        ids = (best_groups.unsqueeze(-1) * group + offsets).flatten(1)
        tail = z[:, n_groups * group :]
        if tail.shape[-1]:
            candidates = torch.cat([candidates, tail], dim=-1)
            tail_ids = torch.arange(n_groups * group, vocab, device=z.device).expand(rows, -1)
            ids = torch.cat([ids, tail_ids], dim=-1)
    values, where = torch.topk(candidates, k, dim=-1)
    return values, ids.gather(-1, where)


def reduce_final(
    logits: torch.Tensor,
    top_k: int,
    keep_probs: bool,
    buffers: Buffers | None = None,
    tracked: Tracked | None = None,
) -> tuple[FinalDistribution, dict[str, torch.Tensor]]:
    """The model's own distribution from its last layer's logits, and that layer's fields.

    The last layer measured against itself needs no rank count and no cross term: its top-1
    is the final token (rank 0) and its KL to the final distribution is 0.

    Args:
        logits: ``[rows, vocab]`` logits of the last layer (any float dtype). With
            ``buffers``, float32 logits are shifted in place by their row maximum.
        top_k, keep_probs, buffers, tracked: As for :func:`reduce_logits`; the distribution
            is kept in ``buffers``' final buffer, which the next call overwrites.

    Returns:
        The :class:`FinalDistribution` and the same fields as :func:`reduce_logits`.
    """
    z = logits.detach().float()
    top_logits, topk_tokens = fast_topk(z, top_k)
    scratch = None if buffers is None else buffers.like("scratch", z)
    track = _track_ranks(z, tracked, scratch, buffers)
    shifted = _shift(z, top_logits[:, :1], in_place=buffers is not None)
    probs = _softmax(shifted, None if buffers is None else buffers.like("final", z))
    log_norm = -probs.gather(-1, topk_tokens[:, :1]).log().squeeze(-1)  # logsumexp(z - max)
    # sum p (z - max), the product written over the shifted logits (not read after this).
    neg_entropy = _rowdot_into(probs, shifted, shifted if buffers is not None else None)
    neg_entropy = neg_entropy - log_norm
    topk_probs = probs.gather(-1, topk_tokens)
    valid = torch.isfinite(topk_probs[:, 0]) & torch.isfinite(neg_entropy)
    final = FinalDistribution(probs, topk_tokens[:, 0].masked_fill(~valid, 0), neg_entropy, valid)
    fields = {
        "topk_tokens": topk_tokens,
        "topk_probs": topk_probs,
        "entropy": (-neg_entropy).clamp_min(0.0) / _LOG2,
        "final_token_probs": topk_probs[:, 0],
        "final_token_ranks": torch.zeros_like(topk_tokens[:, 0]),
        "kl_to_final": torch.zeros_like(neg_entropy),
        **_track_probs(probs, track),
    }
    _mark_missing(fields, valid, valid)
    if keep_probs:
        fields["probs"] = probs
    return final, fields


def reduce_logits(
    logits: torch.Tensor,
    final: FinalDistribution | None,
    top_k: int,
    keep_probs: bool,
    buffers: Buffers | None = None,
    tracked: Tracked | None = None,
) -> dict[str, torch.Tensor]:
    """Reduces one layer's logits on a chunk of positions to the per-cell fields.

    Args:
        logits: ``[rows, vocab]`` logits of one layer (any float dtype). With ``buffers``,
            float32 logits are used as scratch space and overwritten.
        final: The model's own distribution at the same positions, or ``None`` when it is not
            known (then only the top-k and the entropy are returned).
        top_k: How many of the most likely tokens to keep.
        keep_probs: Also return the full ``probs`` (only for ``store_full_probs``).
        buffers: Memory to reuse across layers and chunks; without it, nothing given is
            written to (for code that runs inside a trace).
        tracked: Token ids whose probability and rank to keep (targets, answers), or ``None``.

    Returns:
        ``topk_tokens``/``topk_probs`` ``[rows, k]``, and ``entropy`` (bits),
        ``final_token_probs``, ``final_token_ranks``, ``kl_to_final`` (bits), each ``[rows]``;
        plus ``probs`` ``[rows, vocab]`` if ``keep_probs`` (with ``buffers``, a view of a buffer
        that the next call overwrites). With ``tracked``: ``target_probs``/``target_ranks``
        ``[rows, n]`` and, with row ids, ``row_token_probs``/``row_token_ranks`` ``[rows, a]``
        (NaN, -1 where a row has no id). Rows whose logits are not finite hold no value (NaN,
        -1), and so do the final-based fields of rows where ``final`` is not valid.
    """
    # No autograd here: nnsight runs in-trace code on a thread where grad mode is on.
    z = logits.detach().float()
    out = None if buffers is None else buffers.like("scratch", z)
    top_logits, topk_tokens = fast_topk(z, top_k)
    if final is None:
        track = _track_ranks(z, tracked, out, buffers)
        shifted = _shift(z, top_logits[:, :1], in_place=buffers is not None)
        probs = _softmax(shifted, out)
        log_norm = -probs.gather(-1, topk_tokens[:, :1]).log().squeeze(-1)
        fields = {
            "topk_tokens": topk_tokens,
            "topk_probs": probs.gather(-1, topk_tokens),
            "entropy": (log_norm - _rowdot(probs, shifted)).clamp_min(0.0) / _LOG2,
            **_track_probs(probs, track),
        }
        _mark_missing(fields, torch.isfinite(fields["topk_probs"][:, 0]), None)
        if keep_probs:
            fields["probs"] = probs
        return fields
    final_tokens = final.tokens.unsqueeze(-1)
    # The rank is counted before the shift, which could round near-equal logits together.
    # Ties count in the token's favour, as argmax does: rank 0 iff it is (a) top-1. A float
    # sum of the comparison is exact below 2**24 and several times faster than a bool count.
    final_logit = z.gather(-1, final_tokens)
    final_token_ranks = _rank_from_top(z, final_logit, top_logits, out)
    track = _track_ranks(z, tracked, out, buffers)
    shifted = _shift(z, top_logits[:, :1], in_place=buffers is not None)  # z - max
    # sum p_f (z - max): the product goes to the scratch buffer, free until the softmax.
    cross_logit = _rowdot_into(final.probs, shifted, out)
    probs = _softmax(shifted, out)
    log_norm = -probs.gather(-1, topk_tokens[:, :1]).log().squeeze(-1)  # logsumexp(z - max)
    # H = logsumexp(z) - sum p z and KL(final || layer) = sum p_f log p_f - sum p_f log p,
    # both unchanged by the shift. The product goes over the shifted logits, not read after.
    entropy = _rowdot_into(probs, shifted, shifted if buffers is not None else None)
    entropy = (log_norm - entropy).clamp_min(0.0)
    fields = {
        "topk_tokens": topk_tokens,
        "topk_probs": probs.gather(-1, topk_tokens),
        "entropy": entropy / _LOG2,
        "final_token_probs": probs.gather(-1, final_tokens).squeeze(-1),
        "final_token_ranks": final_token_ranks,
        "kl_to_final": kl_bits(final.neg_entropy - cross_logit, log_norm),
        **_track_probs(probs, track),
    }
    valid = torch.isfinite(fields["topk_probs"][:, 0]) & torch.isfinite(entropy)
    _mark_missing(fields, valid, final.valid)
    if keep_probs:
        fields["probs"] = probs
    return fields


def _rank_from_top(
    z: torch.Tensor, logit: torch.Tensor, top_logits: torch.Tensor, out: torch.Tensor | None
) -> torch.Tensor:
    """``[rows]`` how many entries of each row of ``z`` are strictly above ``logit[:, 0]``.

    Ties count in the token's favour, as argmax does: rank 0 iff it is (a) top-1. A token at
    or above the row's k-th largest logit has every larger one among the top k, so its rank is
    counted there; only the other rows are compared with the whole vocabulary. On the demo
    bench's [3781, 1536] layers, 72-98 % of the rows hold the final token in their top 5, and
    the rank costs 0.13-0.65 ms a layer where the full comparison cost 1.2-1.4 ms. A float sum
    of the comparison is exact below 2**24 and several times faster than a bool count.
    """
    rows = z.shape[0]
    in_top = logit[:, 0] >= top_logits[:, -1]
    # On an accelerator the split would wait for the device; the full count does not.
    outside = None if z.device.type != "cpu" else torch.nonzero(~in_top).squeeze(1)
    if outside is None or 2 * outside.numel() > rows:
        return torch.gt(z, logit, out=out).float().sum(dim=-1).long()
    ranks = (top_logits > logit).sum(dim=-1)
    if outside.numel():
        # Into the scratch buffer where there is one: a fresh copy of up to half the chunk's
        # rows raised the step's peak by 0.1 GB at 16 x 256 on GPT-2's shape (0.79 -> 0.89 GB),
        # and cost 100 ms against 6 ms in faults on [1024, 50257] with a quarter outside.
        scratch = None if out is None else out[: outside.numel()]
        some = torch.index_select(z, 0, outside, out=scratch)
        counted = torch.gt(some, logit.index_select(0, outside), out=some).sum(dim=-1).long()
        ranks.index_copy_(0, outside, counted)
    return ranks


def kl_bits(p_log_p_minus_p_shifted_q: torch.Tensor, log_norm_q: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ q) in bits per row: the one KL of the package (the step's ``kl_to_final``, a
    comparison's KL between two lenses, a lens's evaluation all come through here).

    With ``q = softmax(z)`` and ``m = max z``: KL(p ‖ q) = sum p log p - sum p log q
    = (sum p log p - sum p (z - m)) + logsumexp(z - m). Neither term needs a ``[rows, vocab]``
    log of q.

    Args:
        p_log_p_minus_p_shifted_q: ``[rows]`` sum p log p - sum p (z - m), in nats. Where p and
            q can be equal (two lenses compared) it is computed as sum p (log p - (z - m)), so
            that equal rows give exactly 0.
        log_norm_q: ``[rows]`` logsumexp(z - m).
    """
    return (p_log_p_minus_p_shifted_q + log_norm_q).clamp_min(0.0) / _LOG2


def reduce_pair(
    logits_a: torch.Tensor, logits_b: torch.Tensor, token: torch.Tensor, buffers: Buffers
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``p_a(token)``, ``p_b(token)`` and KL(a ‖ b) in bits per row, from two ``[rows, vocab]``
    logits (two lenses compared cell by cell).

    Works in place in the two logits buffers (float32) plus the scratch buffer of ``buffers``:
    three ``[rows, vocab]`` buffers in all, as many as the step's own chunks use. A row whose
    logits are not finite gives NaN.

    Args:
        logits_a, logits_b: The two lenses' logits at the same cells (overwritten).
        token: ``[rows, 1]`` the token whose probability to read on both sides.
        buffers: Memory to reuse across chunks.
    """
    z_a, z_b = logits_a.detach().float(), logits_b.detach().float()
    scratch = buffers.like("scratch", z_a)
    shifted_a = _shift(z_a, z_a.amax(dim=-1, keepdim=True), in_place=True)
    shifted_b = _shift(z_b, z_b.amax(dim=-1, keepdim=True), in_place=True)
    probs_a = _softmax(shifted_a, scratch)
    log_norm_a = torch.logsumexp(shifted_a, dim=-1)
    log_norm_b = torch.logsumexp(shifted_b, dim=-1)
    p_token_a = probs_a.gather(-1, token).squeeze(-1)
    p_token_b = (shifted_b.gather(-1, token).squeeze(-1) - log_norm_b).exp()
    # sum p_a (s_a - s_b) - L_a: equal rows give 0 - L_a + L_b, exactly 0. A token a rules
    # out (p = 0) adds nothing, even where b's logit is -inf (0 * -inf).
    difference = torch.sub(shifted_a, shifted_b, out=shifted_b).masked_fill_(probs_a == 0, 0.0)
    finite = torch.isfinite(log_norm_a) & torch.isfinite(log_norm_b)
    kl = kl_bits(_rowdot(probs_a, difference) - log_norm_a, log_norm_b)
    kl = kl.masked_fill(~finite, float("nan"))
    return p_token_a, p_token_b, kl


def _mark_missing(
    fields: dict[str, torch.Tensor], valid: torch.Tensor, final_valid: torch.Tensor | None
) -> None:
    """Writes "no value" into the cells of rows whose distribution (or the final one) is not finite.

    A NaN or infinite logit makes the whole softmax row non-finite, so its top-1 probability or
    entropy says whether a row can be trusted; without this, argmax would still name a token,
    the rank comparison would count nothing (rank 0) and the KL would be clamped to 0.
    """
    if final_valid is not None:
        valid_final = valid & final_valid
        if not bool(valid_final.all()):
            for name in FINAL_BASED:
                fields[name] = fields[name].masked_fill(~valid_final, MISSING[name])
    if bool(valid.all()):
        return
    for name in OWN_FIELDS:
        if name not in fields:
            continue
        rows = ~valid if fields[name].dim() == 1 else (~valid).unsqueeze(-1)
        fields[name] = fields[name].masked_fill(rows, MISSING[name])


@dataclass
class _TrackedRanks:
    ids: torch.Tensor  # [rows, n + a] the ids looked up (-1 replaced by 0)
    ranks: torch.Tensor  # [rows, n + a]
    n_targets: int
    absent: torch.Tensor | None  # [rows, a] True where a row has no id
    groups: PromptRows | None = None
    logit_diff: torch.Tensor | None = None  # [rows], read from the logits before the softmax


def _track_ranks(
    z: torch.Tensor, tracked: Tracked | None, scratch: torch.Tensor | None, buffers: Buffers | None
) -> _TrackedRanks | None:
    """The ranks of the tracked ids in unshifted logits ``z`` (read before the softmax)."""
    if tracked is None:
        return None
    rows = z.shape[0]
    n_targets = int(tracked.target_ids.shape[0])
    ids = tracked.target_ids.unsqueeze(0).expand(rows, n_targets)
    ranks = count_above(z, z.gather(-1, ids), scratch, buffers)
    absent = None
    if tracked.row_ids is not None:
        absent = tracked.row_ids < 0
        row_ids = tracked.row_ids.clamp_min(0)
        if tracked.id_rows is None:
            row_ranks = count_above(z, z.gather(-1, row_ids), scratch, buffers)
        else:  # some rows track no answer (a prompt without one): count on the others alone
            some = z.index_select(0, tracked.id_rows)
            counted = count_above(some, some.gather(-1, row_ids[tracked.id_rows]))
            row_ranks = torch.full_like(row_ids, -1).index_copy_(0, tracked.id_rows, counted)
        ids = torch.cat([ids, row_ids], dim=1)
        ranks = torch.cat([ranks, row_ranks], dim=1)
    difference = None if tracked.pairs is None else logit_difference(z, tracked.pairs)
    return _TrackedRanks(ids, ranks, n_targets, absent, tracked.groups, difference)


def _track_probs(probs: torch.Tensor, track: _TrackedRanks | None) -> dict[str, torch.Tensor]:
    """The tracked ids' probabilities and ranks as fields (after the softmax)."""
    if track is None:
        return {}
    tracked_probs = probs.gather(-1, track.ids)
    n = track.n_targets
    fields = {"target_probs": tracked_probs[:, :n], "target_ranks": track.ranks[:, :n]}
    if track.absent is not None:
        fields["row_token_probs"] = tracked_probs[:, n:].masked_fill(track.absent, float("nan"))
        fields["row_token_ranks"] = track.ranks[:, n:].masked_fill(track.absent, -1)
    if track.groups is not None:
        fields["group_probs"] = group_probs(probs, track.groups)
    if track.logit_diff is not None:
        fields["logit_diff"] = track.logit_diff
    return fields


# Up to this many thresholds, one comparison pass each beats the histogram below.
_DIRECT_COUNTS = 12
# From this many columns the cells beat a binary search per entry on a CPU (measured side by
# side on 512 rows and 100 thresholds: the search is 2-3x faster at 8,192 columns, the cells
# 2-3x faster at 50,257).
_CELLS_FROM_VOCAB = 16384
_MAX_CELLS = 8192


def count_above(
    z: torch.Tensor,
    thresholds: torch.Tensor,
    scratch: torch.Tensor | None = None,
    buffers: Buffers | None = None,
) -> torch.Tensor:
    """``[rows, n]`` how many entries of each row of ``z`` are strictly above each threshold.

    This is a rank counted from 0 with ties in the token's favour, as for the final token.
    For a few thresholds, one comparison pass each. For many (a hundred tracked targets), one
    pass per threshold would cost more than the unembedding. On an accelerator, or a small
    vocabulary, a binary search places each entry among the sorted thresholds. On a CPU with a
    large vocabulary that search costs more than the unembedding too (0.66 s on
    ``[512, 50257]`` for 100 thresholds): there each row is cut into equal-width cells, a
    single histogram counts the entries of every cell, and only the entries that share a
    threshold's cell are compared with it exactly. The cell of a value is computed by the same
    float operations for entries and thresholds and is monotone in the value, so the count is
    exact.

    Args:
        z: ``[rows, vocab]`` float32 values (not modified).
        thresholds: ``[rows, n]`` float32.
        scratch: A ``[rows, vocab]`` float32 tensor to write into, or ``None``.
        buffers: Reusable memory for the histogram's integer keys, or ``None``.
    """
    rows = z.shape[0]
    n = thresholds.shape[1]
    if n == 0 or rows == 0:
        return torch.zeros(rows, n, dtype=torch.long, device=z.device)
    if n <= _DIRECT_COUNTS:
        out = torch.empty_like(z) if scratch is None else scratch
        columns = [torch.gt(z, thresholds[:, j : j + 1], out=out).sum(dim=-1) for j in range(n)]
        return torch.stack(columns, dim=1).long()
    if z.device.type != "cpu" or z.shape[1] < _CELLS_FROM_VOCAB:
        return _count_above_by_search(z, thresholds)
    return _count_above_by_cells(z, thresholds, scratch, buffers)


def _count_above_by_search(z: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    """Each entry's place among the sorted thresholds, then a histogram of the places.

    On an accelerator a binary search per entry runs in parallel (1 ms for 100 thresholds on
    ``[512, 50257]`` on an H200, where the cells' host round trips cost more), and nothing here
    waits for the device: the histogram is a ``scatter_add_`` into a fixed size. On a CPU it
    wins on small vocabularies.
    """
    rows, n = thresholds.shape
    ordered, order = thresholds.sort(dim=1)
    # below[r, v] = how many thresholds are strictly below z[r, v]; z > t_(k) iff below > k.
    below = torch.searchsorted(ordered.contiguous(), z.contiguous())
    below += torch.arange(rows, device=z.device).unsqueeze(1) * (n + 1)
    counts = torch.zeros(rows * (n + 1), dtype=torch.long, device=z.device)
    counts.scatter_add_(0, below.view(-1), torch.ones_like(below.view(-1)))
    counts = counts.view(rows, n + 1)
    # Entries above the k-th smallest threshold: those with more than k thresholds below.
    above_sorted = counts.flip(1).cumsum(1).flip(1)[:, 1:]
    return torch.empty_like(above_sorted).scatter_(1, order, above_sorted)


def _count_above_by_cells(
    z: torch.Tensor,
    thresholds: torch.Tensor,
    scratch: torch.Tensor | None,
    buffers: Buffers | None,
) -> torch.Tensor:
    rows, vocab = z.shape
    n = thresholds.shape[1]
    device = z.device
    # A few entries a cell: fewer cells leave more entries to compare exactly, more make the
    # histogram (rows x cells counts) larger than it saves.
    n_cells = int(min(_MAX_CELLS, max(64, 1 << (vocab // 4).bit_length())))
    low = z.amin(dim=1, keepdim=True)
    high = z.amax(dim=1, keepdim=True)
    finite = torch.isfinite(low) & torch.isfinite(high)
    span = torch.where(finite, high - low, torch.ones_like(low))
    scale = torch.where(span > 0, (n_cells - 1) / span, torch.zeros_like(span))
    low = torch.where(finite, low, torch.zeros_like(low))
    all_finite = bool(finite.all())

    def cells(values: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
        # The same two float operations for entries and thresholds: equal values, equal cells.
        # In a finite row the cells lie in [0, n_cells - 1] already (low is the row's minimum).
        cell = torch.sub(values, low, out=out).mul_(scale)
        if not all_finite:  # such rows are discarded, but must not reach another row's cells
            cell.nan_to_num_(0.0, 0.0, 0.0).clamp_(0, n_cells - 1)
        return cell

    offsets = torch.arange(rows, device=device, dtype=torch.int32).unsqueeze(1) * n_cells
    keys = (
        torch.empty(rows, vocab, dtype=torch.int32, device=device)
        if buffers is None
        else buffers.get("keys", rows, vocab, device, torch.int32)
    )
    keys.copy_(cells(z, scratch)).add_(offsets)
    flat_keys = keys.view(-1)
    at_or_below = torch.bincount(flat_keys, minlength=rows * n_cells).view(rows, n_cells)
    at_or_below = at_or_below.cumsum_(dim=1).view(-1)
    threshold_keys = cells(thresholds, None).to(torch.int32).add_(offsets).view(-1)
    # Entries in higher cells are above; those in the same cell are compared one by one.
    above = vocab - at_or_below.index_select(0, threshold_keys).view(rows, n)
    del at_or_below
    # Per cell: how many thresholds it holds, and where the first is in their sorted order.
    order = torch.argsort(threshold_keys)
    sorted_keys = threshold_keys[order]
    starts = torch.ones_like(sorted_keys, dtype=torch.bool)
    starts[1:] = sorted_keys[1:] != sorted_keys[:-1]
    run_starts = torch.nonzero(starts).squeeze(1)
    run_ends = torch.cat([run_starts[1:], run_starts.new_tensor([len(sorted_keys)])])
    first_of_cell = torch.zeros(rows * n_cells, dtype=torch.int32, device=device)
    held = torch.zeros(rows * n_cells, dtype=torch.int32, device=device)
    first_of_cell[sorted_keys[run_starts]] = run_starts.int()
    held[sorted_keys[run_starts]] = (run_ends - run_starts).int()
    candidates = torch.nonzero(held.bool().index_select(0, flat_keys)).squeeze(1)
    candidate_keys = flat_keys.index_select(0, candidates)
    candidate_values = z.reshape(-1).index_select(0, candidates)
    first = first_of_cell.index_select(0, candidate_keys).long()
    n_held = held.index_select(0, candidate_keys)
    flat_thresholds = thresholds.reshape(-1)
    extra = torch.zeros(rows * n, dtype=torch.long, device=device)
    for k in range(int(n_held.max()) if len(candidates) else 0):  # usually one a cell
        pairs = n_held > k
        which = order[(first + k)[pairs]]
        extra.index_add_(0, which, (candidate_values[pairs] > flat_thresholds[which]).long())
    return above + extra.view(rows, n)


def _shift(z: torch.Tensor, peak: torch.Tensor, in_place: bool) -> torch.Tensor:
    return z.sub_(peak) if in_place else z - peak


def _softmax(z: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last dim: one fused kernel, written into ``out`` when given."""
    if out is None:
        return torch.softmax(z, dim=-1)
    return torch.ops.aten._softmax.out(z, -1, False, out=out)


def _rowdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise dot product of two ``[rows, vocab]`` tensors.

    On CPU with a large vocabulary, one BLAS dot per row: measured on ``[512, 50257]``, 8 ms
    against 15 ms for a batched matmul with 1×1 outputs and 37 ms for ``torch.linalg.vecdot``
    (which multiplies, then sums). On a small vocabulary the Python loop over rows costs more
    than the arithmetic, and ``vecdot`` wins: on the demo model's 1,536 columns it took 12 µs
    on 52 rows and 4.9 ms on 3,200, against 183 µs and 42 ms for the batched matmul, and it
    sums pairwise, 50 times closer to a float64 sum (2e-6 against 1e-4 on ``sum p z`` of
    logits about 3). On an accelerator each call is a kernel launch: there, one batched matmul.
    """
    if a.device.type != "cpu":
        return _rowdot_batched(a, b)
    rows, vocab = a.shape
    if rows == 0 or vocab < _LARGE_VOCAB:
        # In blocks of rows: vecdot multiplies into a fresh tensor before it sums, which must
        # not cost a chunk's worth of memory (each row's sum is the same in any block).
        step = max(1, _ROWDOT_BLOCK // max(vocab, 1))
        if rows <= step:
            return torch.linalg.vecdot(a, b)
        return torch.cat(
            [torch.linalg.vecdot(a[s : s + step], b[s : s + step]) for s in range(0, rows, step)]
        )
    return torch.stack([torch.dot(x, y) for x, y in zip(a, b, strict=True)])


def _rowdot_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """:func:`_rowdot_tiled`, with the elementwise products written into ``out`` (a
    ``b``-shaped buffer, which may be ``a`` or ``b`` itself) rather than a temporary.

    The same numbers: on a small vocabulary on the CPU the row dot product is the product,
    then a sum over each row (what ``torch.linalg.vecdot`` computes); elsewhere, or without
    ``out``, :func:`_rowdot_tiled` runs as it is.
    """
    rows, vocab = a.shape
    if out is None or a.device.type != "cpu" or vocab >= _LARGE_VOCAB or rows == 0:
        return _rowdot_tiled(a, b)
    if b.shape[0] == rows:
        return torch.mul(a, b, out=out).sum(dim=-1)
    blocks = b.shape[0] // rows
    shape = (blocks, rows, vocab)
    return torch.mul(b.view(shape), a, out=out.view(shape)).sum(dim=-1).view(-1)


def _rowdot_tiled(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """:func:`_rowdot` of ``a`` repeated along ``b``'s rows: ``b`` holds several layers' rows
    stacked (:meth:`FinalDistribution.tiled`), each block against ``a``; the same numbers as
    one call per layer."""
    rows = a.shape[0]
    if b.shape[0] == rows:
        return _rowdot(a, b)
    return torch.cat([_rowdot(a, b[start : start + rows]) for start in range(0, b.shape[0], rows)])


def _rowdot_batched(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.bmm(a.unsqueeze(1), b.unsqueeze(2)).reshape(a.shape[0])


def chunks(max_chunk_bytes: int, vocab_size: int, n_rows: int) -> Iterator[slice]:
    """The one chunk loop: ``n_rows`` rows of ``[rows, vocab]`` float32 logits in balanced
    slices under the byte budget (the step's chunks, a comparison's, an evaluation's)."""
    step = rows_per_chunk(max_chunk_bytes, vocab_size, n_rows)
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def rows_per_chunk(max_chunk_bytes: int, vocab_size: int, n_rows: int) -> int:
    """Rows per chunk of float32 logits under the byte budget, with the chunks balanced.

    Balanced, because a last chunk of a few rows would stream the whole unembedding matrix for
    almost no work.
    """
    limit = max(1, int(max_chunk_bytes) // (4 * int(vocab_size)))
    n_chunks = -(-max(n_rows, 1) // limit)
    return -(-max(n_rows, 1) // n_chunks)


def reduce_layers(
    logits_of: Callable[[int], torch.Tensor],
    layers: Sequence[int],
    final_layer: int | None,
    top_k: int,
    keep_probs: bool,
    buffers: Buffers | None = None,
    keep: Callable[[int, dict[str, torch.Tensor]], dict[str, torch.Tensor]] = lambda _, f: f,
    tracked: Tracked | None = None,
) -> tuple[list[dict[str, torch.Tensor]], FinalDistribution | None]:
    """The reduction loop of one lens: :func:`reduce_lenses` with a single lens.

    The adapter of other libraries' results runs this; the step runs :func:`reduce_lenses`.

    Args:
        logits_of: ``layer -> [rows, vocab]`` logits of that layer on the current rows.
        layers, final_layer, top_k, keep_probs, buffers, tracked: As for :func:`reduce_lenses`.
        keep: Called as ``keep(layer, fields)`` (see :func:`reduce_lenses`).

    Returns:
        One dict of fields per layer of ``layers``, and the final distribution (or ``None``).
    """
    per_lens, final, _ = reduce_lenses(
        lambda _lens, layer: logits_of(layer),
        n_lenses=1,
        layers=layers,
        final_layer=final_layer,
        top_k=top_k,
        keep_probs=keep_probs,
        buffers=buffers,
        keep=lambda _lens, layer, fields: keep(layer, fields),
        tracked=tracked,
    )
    return per_lens[0], final


def reduce_lenses(
    logits_of: Callable[[int, Row], torch.Tensor],
    *,
    n_lenses: int,
    layers: Sequence[Row],
    final_layer: Row | None,
    top_k: int,
    keep_probs: bool,
    buffers: Buffers | None = None,
    keep: Callable[[int, Row, dict[str, torch.Tensor]], dict[str, torch.Tensor]] = (
        lambda _k, _layer, f: f
    ),
    tracked: Tracked | None = None,
    between: bool = False,
    logits_of_layers: Callable[[int, Sequence[Row]], torch.Tensor] | None = None,
    group: int = 1,
) -> tuple[
    list[list[dict[str, torch.Tensor]]],
    FinalDistribution | None,
    dict[tuple[int, int], list[torch.Tensor]] | None,
]:
    """The one reduction loop: the final distribution first, then each layer of each lens
    against it.

    The step after its trace (per chunk of positions) and inside a trace (remote) run this loop
    for one lens or several side by side; only where the logits come from differs. The final
    distribution is the model's own output, the last layer read as it is, which no lens changes
    (:meth:`murano_widgets.Lens.read`): it is computed once for all the lenses, and the last
    layer's fields are the same for each.

    Args:
        logits_of: ``(lens, layer) -> [rows, vocab]`` logits of that lens at that layer on the
            current rows (the final layer is asked of lens 0). A "layer" is whatever key names
            a row of the result: a block index, or the step's ``Node(l, "resid_mid")``. With ``between``, the logits of
            the lenses at one layer must be distinct tensors that stay valid until the next
            layer is asked for (one buffer per lens).
        n_lenses: How many lenses.
        layers: The layers to reduce, in the order their fields are returned.
        final_layer: The layer whose distribution is the model's own output (it need not be in
            ``layers``), or ``None`` when unknown: then no final-based field is computed.
        top_k, keep_probs, buffers: As for :func:`reduce_logits`.
        keep: Called as ``keep(lens, layer, fields)`` as soon as a layer's fields exist (to move
            them off the device, or copy the probabilities out of a buffer before it is reused);
            its return value is what is kept.
        tracked: Token ids whose probability and rank every layer keeps, or ``None``.
        between: Also measure KL(a ‖ b) in bits between every two of the lenses and the final
            distribution (see :func:`kl_pairs`; needs ``final_layer``).
        logits_of_layers: ``(lens, layers) -> [len(layers) * rows, vocab]``: several layers'
            logits on the current rows, stacked layer after layer, each the same as
            ``logits_of`` gives; with ``group``, for reducing layers together.
        group: Reduce up to this many layers (other than the final one) at once, as one
            ``[group * rows, vocab]`` tensor: on small chunks each reduction op costs more in
            dispatch than in arithmetic, so fewer, larger ops are faster (not with
            ``between``). Every field is the same as one layer at a time.

    Returns:
        Per lens, one dict of fields per layer of ``layers``; the final distribution (or
        ``None``); and with ``between``, ``{(a, b): [one [rows] tensor per layer]}`` where ``a``
        and ``b`` are lens indices and ``n_lenses`` stands for the final distribution (else
        ``None``).
    """
    if between and final_layer is None:
        raise ValueError("KL between lenses needs the final layer")
    final: FinalDistribution | None = None
    final_fields: dict[str, torch.Tensor] = {}
    final_logits: torch.Tensor | None = None
    if final_layer is not None:
        logits = logits_of(0, final_layer)
        if between:
            # reduce_final shifts its logits in place; the pairs need them as they were.
            final_logits = logits.detach().float()
            if buffers is not None:
                final_logits = buffers.like("final_logits", final_logits).copy_(final_logits)
        final, final_fields = reduce_final(
            logits,
            top_k,
            keep_probs and final_layer in layers,
            buffers,
            tracked if final_layer in layers else None,
        )
    kept: list[list[dict[str, torch.Tensor]]] = [[] for _ in range(n_lenses)]
    pairs: dict[tuple[int, int], list[torch.Tensor]] | None = None
    if between:
        pairs = {(a, b): [] for a in range(n_lenses + 1) for b in range(n_lenses + 1) if a != b}
    at_once = group if pairs is None and logits_of_layers is not None else 1
    pending: list[Any] = []  # layers waiting to be reduced together, in order

    def reduce_pending() -> None:
        n = len(pending)
        if not n:
            return
        final_n = None if final is None else final.tiled(n)
        tracked_n = None if tracked is None else tracked.tiled(n)
        for k in range(n_lenses):
            if n == 1:
                logits = logits_of(k, pending[0])
            else:
                assert logits_of_layers is not None
                logits = logits_of_layers(k, pending)
            fields = reduce_logits(logits, final_n, top_k, keep_probs, buffers, tracked_n)
            rows = logits.shape[0] // n
            for g, layer in enumerate(pending):
                own = (
                    fields
                    if n == 1
                    else {name: v[g * rows : (g + 1) * rows] for name, v in fields.items()}
                )
                kept[k].append(keep(k, layer, own))
        pending.clear()

    for layer in layers:
        if layer == final_layer:
            reduce_pending()
            for k in range(n_lenses):
                kept[k].append(keep(k, layer, dict(final_fields)))
            if pairs is not None and final is not None:
                # Every lens reads the last layer as it is: no lens differs from another there.
                zero = torch.zeros(final.valid.shape, device=final.valid.device)
                for values in pairs.values():
                    values.append(zero.masked_fill(~final.valid, float("nan")))
            continue
        if pairs is None:
            pending.append(layer)
            if len(pending) >= at_once:
                reduce_pending()
            continue
        all_logits = [logits_of(k, layer) for k in range(n_lenses)]
        assert final_logits is not None
        for pair, kl in kl_pairs([*all_logits, final_logits], buffers).items():
            pairs[pair].append(kl)
        for k, logits in enumerate(all_logits):
            fields = reduce_logits(logits, final, top_k, keep_probs, buffers, tracked)
            kept[k].append(keep(k, layer, fields))
    reduce_pending()
    return kept, final, pairs


def kl_pairs(
    logits: Sequence[torch.Tensor], buffers: Buffers | None = None
) -> dict[tuple[int, int], torch.Tensor]:
    """KL(a ‖ b) in bits per row between every two of several ``[rows, vocab]`` logits, both
    ways (the same cells read through several lenses).

    With ``p_a = softmax(z_a)`` and ``L = logsumexp(z)``: KL(a ‖ b) = sum p_a (z_a - z_b) - L_a
    + L_b, through :func:`kl_bits`. The difference is taken per token before the sum: on the
    demo model (logits up to 20, KL up to 17 bits) the difference of the two sums
    ``sum p_a z_a - sum p_a z_b`` was off a float64 reference by up to 4.4e-4 bits; this way by
    1.5e-4 (``kl_to_final``, from shifted logits: 4.6e-5). Per
    distribution: one softmax and one logsumexp; per pair, one subtraction and one row dot
    product, in two reused buffers. Two rows with equal logits give exactly 0. A row whose
    logits are not finite on either side gives NaN.

    Args:
        logits: The logits (not modified).
        buffers: Memory to reuse, or ``None`` (inside a trace).

    Returns:
        ``{(a, b): [rows]}`` for every ordered pair of distinct indices.
    """
    zs = [z.detach().float() for z in logits]
    log_norms = [torch.logsumexp(z, dim=-1) for z in zs]
    finite = [torch.isfinite(norm) for norm in log_norms]
    out: dict[tuple[int, int], torch.Tensor] = {}
    for a, z_a in enumerate(zs):
        probs = _softmax(z_a, None if buffers is None else buffers.like("scratch", z_a))
        for b, z_b in enumerate(zs):
            if a == b:
                continue
            difference = torch.sub(
                z_a, z_b, out=None if buffers is None else buffers.like("difference", z_a)
            )
            # A token a rules out (p = 0) adds nothing, even where b's logit is -inf.
            difference.masked_fill_(probs == 0, 0.0)
            # (sum - L_a) + L_b: equal rows give (0 - L) + L, exactly 0.
            kl = kl_bits(_rowdot(probs, difference) - log_norms[a], log_norms[b])
            out[(a, b)] = kl.masked_fill(~(finite[a] & finite[b]), float("nan"))
    return out


def stack_layers(per_layer: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """``[{name: [rows, ...]}]`` per layer to ``{name: [n_layers, rows, ...]}``."""
    return {name: torch.stack([fields[name] for fields in per_layer]) for name in per_layer[0]}
