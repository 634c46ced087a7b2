"""What changed between two lenses: ``compare(a, b)`` and ``compare_lenses(...)``.

Two :class:`LogitLensResult`\\ s (two prompts, two models with one tokenizer, or two lenses on one
model) are paired cell by cell (see :mod:`murano_widgets.comparison.alignment`) and compared on ``a``'s
grid: the change ``b - a`` in the probability of a chosen token (by default ``a``'s model's own
final prediction at each position), whether the top-1 token differs, KL(a ‖ b) in bits, and the
change ``b - a`` in each of the heatmap's per-cell metrics (:data:`~murano_widgets.metrics.DIFF_CHANGES`:
entropy, the final prediction's probability and rank, KL to the final distribution, the top-1
probability), read from both results' fields on aligned cells (:attr:`LensComparison.metric_deltas`).

``compare`` works from the two results alone. The probability of a token under a lens is known
exactly where the result holds it: ``all_probs`` (``store_full_probs=True``), the final-token
probability (when the chosen token is that result's own final prediction) or the top-k; elsewhere
the cell is missing, with a warning. KL needs both full distributions (``all_probs``).

``compare_lenses`` runs both sides itself and computes every metric at every aligned cell, in
chunks of aligned positions: per chunk and per pair of aligned layers, both sides' logits, then
the KL, the two probabilities of the chosen token, and nothing of size ``vocab`` survives the
chunk.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import torch

import murano_widgets.metrics as registry
from murano_widgets._checks import check_int, check_model, check_str
from murano_widgets._memory import Need, preflight
from murano_widgets.comparison.alignment import (
    ALIGN_MODES,
    Alignment,
    align_results,
    check_align,
    partner_layer,
)
from murano_widgets.lenses import as_lens, title_of
from murano_widgets.results.result import LogitLensResult
from murano_widgets.step.logit_lens import DEFAULT_MAX_CHUNK_BYTES, LogitLens, resolve_layers
from murano_widgets.step.reductions import Buffers, chunks, reduce_pair
from murano_widgets.types import validate_prompts

__all__ = ["ALIGN_MODES", "LensComparison", "compare", "compare_lenses"]


@dataclass(repr=False)
class LensComparison:
    """Two lens results compared cell by cell, on ``a``'s grid ``[n_layers, n_inputs, seq]``.

    Cells without a partner in ``b`` (another layer, a position outside the alignment,
    padding) or without a value on either side are missing: NaN in the float fields, ``False``
    in ``aligned``.

    Attributes:
        a, b: The two results.
        delta_prob: ``p_b(token) - p_a(token)``, the change in the chosen token's probability.
        token_prob_a, token_prob_b: The two probabilities of the chosen token.
        top1_differs: Whether the two cells' top-1 tokens differ (``False`` where not aligned:
            read it with ``aligned``).
        kl_a_to_b: KL(a ‖ b) in bits, or ``None`` when neither ``compare_lenses`` nor both results'
            ``all_probs`` could give it.
        aligned: Whether the cell has a partner in ``b`` and both cells hold a value.
        token: ``[n_inputs, seq]`` the chosen token at each position of ``a`` (-1: none).
        token_rule: How the token was chosen (``"final prediction of a"``, ``"token 42"``, ...).
        layer_rows: For each row of ``a``, the row of ``b`` it pairs with (-1: none).
        b_layers: For each row of ``a``, the model layer of ``b`` it pairs with.
        positions: ``[n_inputs, seq]`` for each position of ``a``, the sequence index of its
            partner in ``b`` (-1: none).
        align: The position alignment used: ``"tokens"``, ``"end"`` or ``"prefix"``.
        alignment_note: How layers and positions were paired, in words.
        source: ``"results"`` (from the results alone) or ``"run together"``
            (``compare_lenses``).

    The change in each heatmap metric (:data:`~murano_widgets.metrics.DIFF_CHANGES`) is read
    from the two results' fields: :attr:`metric_deltas` (all of them), :meth:`delta` and
    :meth:`sides` (one field).
    """

    a: LogitLensResult
    b: LogitLensResult
    delta_prob: torch.Tensor
    token_prob_a: torch.Tensor
    token_prob_b: torch.Tensor
    top1_differs: torch.Tensor
    kl_a_to_b: torch.Tensor | None
    aligned: torch.Tensor
    token: torch.Tensor
    token_rule: str
    layer_rows: list[int]
    b_layers: list[int]
    positions: torch.Tensor
    align: str
    alignment_note: str
    source: str = "results"
    labels: tuple[str, str] = field(default=("a", "b"))

    @property
    def layers(self) -> list[int]:
        """The model layer of each row (``a``'s)."""
        return self.a.layers

    @property
    def n_inputs(self) -> int:
        return self.a.n_inputs

    def sides(self, field: str) -> tuple[torch.Tensor, torch.Tensor]:
        """A per-cell field of both results on ``a``'s grid: ``(a's, b's)`` as float32, ``b``'s
        moved to each cell's partner; NaN where the cell is not aligned or either side has no
        value there (a rank's -1, a NaN).

        Raises:
            ValueError: If either result lacks ``field``.
        """
        lacking = self.lacking(field)
        if lacking:
            raise ValueError(f"{lacking} {field}: its change cannot be computed")
        nan = float("nan")
        on_a = _cell_values(getattr(self.a, field))
        on_b = _gather(_cell_values(getattr(self.b, field)), self.layer_rows, self.positions, nan)
        known = self.aligned & torch.isfinite(on_a) & torch.isfinite(on_b)
        return on_a.masked_fill(~known, nan), on_b.masked_fill(~known, nan)

    def delta(self, field: str) -> torch.Tensor:
        """``b``'s ``field`` minus ``a``'s on ``a``'s grid (NaN where :meth:`sides` is)."""
        values_a, values_b = self.sides(field)
        return values_b - values_a

    @cached_property
    def metric_deltas(self) -> dict[str, torch.Tensor]:
        """The change ``b - a`` in each of the heatmap's per-cell metrics both results hold, by
        its diff metric's name (``"delta_entropy"``, ...: :data:`~murano_widgets.metrics.DIFF_CHANGES`),
        ``[n_layers, n_inputs, seq]`` on ``a``'s grid, NaN where not aligned or without a value
        (computed once, on first use)."""
        return {
            name: self.delta(metric.field)
            for name, metric in registry.DIFF_CHANGES.items()
            if self.has_field(metric.field)
        }

    def has_field(self, field: str) -> bool:
        """Whether both results hold ``field`` (so its change is known)."""
        return not self.lacking(field)

    def lacking(self, field: str) -> str:
        """Which results lack ``field``, as the reason its change is unknown: ``"b has no"``,
        ``"a and b have no"``; ``""`` when both hold it."""
        sides = [n for n, r in (("a", self.a), ("b", self.b)) if getattr(r, field, None) is None]
        if not sides:
            return ""
        return f"{' and '.join(sides)} {'have' if len(sides) == 2 else 'has'} no"

    def describe_cell(self, prompt: int, layer_index: int, position: int) -> dict[str, Any]:
        """One cell of the comparison: both sides' descriptions and the differences.

        Args:
            prompt: The prompt's index.
            layer_index: The row of ``a``.
            position: The position among ``a``'s prompt's real tokens.

        Returns:
            ``prompt``, ``layer_index``, ``position``, ``aligned``, ``delta_prob``,
            ``token_prob_a``, ``token_prob_b``, ``top1_differs``, ``kl_a_to_b`` (NaN when unknown), ``token``
            (the chosen token's text), ``a`` (``a.describe_cell(...)``), ``b`` (``b``'s
            description of the partner cell, or ``None``), and the change in each heatmap
            metric both results hold, by its diff metric's name (``delta_entropy``, ...: NaN
            where unknown; :attr:`metric_deltas`).

        Raises:
            ValueError: For an index out of range.
        """
        described_a = self.a.describe_cell(prompt, layer_index, position)
        seq = described_a["sequence_index"]
        cell = (described_a["layer_index"], prompt, seq)
        row_b, seq_b = self.layer_rows[cell[0]], int(self.positions[prompt, seq])
        described_b = None
        if row_b >= 0 and seq_b >= 0:
            position_b = int((self.b.positions(prompt) == seq_b).nonzero()[0, 0])
            described_b = self.b.describe_cell(prompt, row_b, position_b)
        token = int(self.token[prompt, seq])
        strings = self.a.token_strings or {}
        return {
            "prompt": prompt,
            "layer_index": cell[0],
            "position": position,
            "aligned": bool(self.aligned[cell]),
            "delta_prob": float(self.delta_prob[cell]),
            "token_prob_a": float(self.token_prob_a[cell]),
            "token_prob_b": float(self.token_prob_b[cell]),
            "top1_differs": bool(self.top1_differs[cell]) if self.aligned[cell] else None,
            "kl_a_to_b": float("nan") if self.kl_a_to_b is None else float(self.kl_a_to_b[cell]),
            "token": strings.get(token, "") if token >= 0 else "",
            "a": described_a,
            "b": described_b,
            **{name: float(delta[cell]) for name, delta in self.metric_deltas.items()},
        }

    def __repr__(self) -> str:
        shape = list(self.delta_prob.shape)
        return (
            f"LensComparison({shape}, align={self.align!r}, source={self.source!r}, "
            f"kl_a_to_b={'yes' if self.kl_a_to_b is not None else 'no'}, "
            f"aligned={int(self.aligned.sum())}/{self.aligned.numel()} cells)"
        )


def compare(
    a: LogitLensResult,
    b: LogitLensResult,
    *,
    align: str = "auto",
    token: int | str | torch.Tensor | None = None,
) -> LensComparison:
    """Compares two lens results cell by cell, on ``a``'s grid.

    Args:
        a, b: The two results (prompt ``i`` of ``a`` is compared with prompt ``i`` of ``b``).
            They must share a vocabulary: two prompts, two lenses on one model, or two models
            with one tokenizer.
        align: How positions pair: ``"tokens"`` (same tokens, one to one), ``"end"`` (from the
            last token), ``"prefix"`` (the shared token prefix only) or ``"auto"`` (``"tokens"``
            when the prompts have the same tokens, else an error asking for one of the others).
        token: The token whose probability change ``delta_prob`` shows: ``None`` for ``a``'s
            model's own final prediction at each position, a token id, a token's exact text
            (as ``a`` decodes it), or an ``[n_inputs, seq]`` tensor of ids on ``a``'s grid.

    Returns:
        A :class:`LensComparison`. Where a result does not hold the chosen token's probability
        (it is not its final prediction nor in its top-k, and it has no ``all_probs``), that
        cell's ``delta_prob`` is missing and a warning says so; :func:`compare_lenses` computes
        every cell. ``kl_a_to_b`` is there when both results have ``all_probs``.

    Raises:
        TypeError: If ``a`` or ``b`` is not a :class:`LogitLensResult`.
        ValueError: For an unknown ``align``, prompts whose tokens differ under ``"auto"`` or
            ``"tokens"``, different numbers of prompts, different vocabularies, or a ``token``
            that is not in the vocabulary.
    """
    plan = _plan(a, b, align, token)
    token_prob_a, known_a = _token_probs(a, plan.token.unsqueeze(0).expand_as(a.max_probs))
    token_b = _on_b_grid(plan.token, plan.alignment, b)
    prob_b_on_b, known_b_on_b = _token_probs(b, token_b.unsqueeze(0).expand_as(b.max_probs))
    token_prob_b = _gather(
        prob_b_on_b, plan.alignment.layer_rows, plan.alignment.positions, float("nan")
    )
    known_b = _gather(known_b_on_b, plan.alignment.layer_rows, plan.alignment.positions, False)
    aligned = plan.aligned
    unknown = aligned & ~(known_a & known_b) & (plan.token >= 0)
    if bool(unknown.any()):
        warnings.warn(
            f"compare: the chosen token's probability is unknown in {int(unknown.sum())} of "
            f"{int(aligned.sum())} aligned cells (it is neither the result's final prediction "
            "nor in its top-k there); they are missing from delta_prob. Run both with "
            "compare_lenses(...) (or LogitLens(..., store_full_probs=True)) to get every cell.",
            RuntimeWarning,
            stacklevel=2,
        )
    kl = None
    if a.all_probs is not None and b.all_probs is not None:
        # One layer's aligned cells at a time: two gathered float32 copies, their logs and
        # the reduction's buffers, about six [cells, vocabulary] tensors.
        cells = int((plan.alignment.positions >= 0).sum())
        vocab = int(a.all_probs.shape[-1])
        preflight(
            "compare's KL from the full distributions",
            [
                Need(
                    "both results' all_probs (store_full_probs=True)",
                    6 * cells * vocab * 4,
                    f"6 x {cells} aligned cells x vocabulary {vocab} x 4 bytes",
                    "Compare fewer prompts at a time, or use compare_lenses(...), which "
                    "reduces the KL chunk by chunk without the full distributions.",
                )
            ],
        )
        kl = _kl_from_full(a, b, plan.alignment, aligned)
    return _assemble(plan, token_prob_a, token_prob_b, kl, source="results")


def compare_lenses(
    model_a: Any,
    prompts_a: str | Sequence[str],
    *,
    model_b: Any = None,
    prompts_b: str | Sequence[str] | None = None,
    lens_a: Any = None,
    lens_b: Any = None,
    layers: Sequence[int] | str = "all",
    align: str = "auto",
    token: int | str | torch.Tensor | None = None,
    top_k: int = 5,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
) -> LensComparison:
    """Runs two lenses and compares them at every aligned cell, KL included.

    Each side runs the :class:`LogitLens` step as usual (its result is kept in the
    comparison), and the block outputs its one trace saved serve the pair too: per chunk of
    aligned positions and per pair of aligned layers both sides' logits are made, and
    reduced at once to KL(a ‖ b) (bits) and the two probabilities of the chosen token. Peak extra
    memory is three ``[rows, vocab]`` float32 buffers (rows set by ``max_chunk_bytes``) plus the
    saved block outputs; nothing of size ``vocab`` survives a chunk.

    Args:
        model_a: The model of side ``a``.
        prompts_a: One prompt or a list of prompts.
        model_b: The model of side ``b`` (default ``model_a``); it must share ``model_a``'s
            vocabulary.
        prompts_b: The prompts of side ``b`` (default ``prompts_a``), as many as ``prompts_a``.
        lens_a, lens_b: Each side's lens (``None``: the logit lens; a
            :class:`~murano_widgets.TunedLens`: the tuned lens).
        layers: ``a``'s layers (``"all"`` or a list); ``b`` runs their partners (the same
            layers, or by relative depth when the depths differ).
        align: As for :func:`compare`.
        token: As for :func:`compare`.
        top_k: The top-k each side keeps (the widget's tooltip shows them).
        max_chunk_bytes: The size of one ``[rows, vocab]`` float32 buffer.

    Returns:
        A :class:`LensComparison` with ``kl_a_to_b`` and ``delta_prob`` at every aligned cell.

    Raises:
        TypeError, ValueError: Before any model work, for bad prompts, layers, ``align``,
            ``top_k`` or ``max_chunk_bytes``, prompts of different counts, or models with
            different vocabularies.
    """
    check_model(model_a, "model_a")
    model_b = model_a if model_b is None else check_model(model_b, "model_b")
    prompts_a = validate_prompts(
        [prompts_a] if isinstance(prompts_a, str) else prompts_a, "prompts_a"
    )
    if prompts_b is None:
        prompts_b = list(prompts_a)
    else:
        prompts_b = validate_prompts(
            [prompts_b] if isinstance(prompts_b, str) else prompts_b, "prompts_b"
        )
    if len(prompts_a) != len(prompts_b):
        raise ValueError(
            f"prompts_a has {len(prompts_a)} prompts and prompts_b has {len(prompts_b)}: "
            "prompt i of a is compared with prompt i of b, so give as many of each"
        )
    check_align(align)
    check_int("max_chunk_bytes", max_chunk_bytes, 1, None, None)
    if int(model_a.vocab_size) != int(model_b.vocab_size):
        raise ValueError(
            f"model_a has a vocabulary of {model_a.vocab_size} tokens and model_b one of "
            f"{model_b.vocab_size}: a token's probability can only be compared under one "
            "tokenizer"
        )
    lens_a = as_lens(lens_a, model_a, "lens_a")
    lens_b = as_lens(lens_b, model_b, "lens_b")
    _check_token_argument(token, int(model_a.vocab_size))
    layers_a = resolve_layers(layers, model_a.n_layers)
    layers_b = sorted(
        {partner_layer(layer, model_a.n_layers, model_b.n_layers) for layer in layers_a}
    )
    step_a = LogitLens(model_a, layers_a, top_k=top_k, max_chunk_bytes=max_chunk_bytes, lens=lens_a)
    step_b = LogitLens(model_b, layers_b, top_k=top_k, max_chunk_bytes=max_chunk_bytes, lens=lens_b)

    # Each step's own trace: its saved block outputs serve the pair's reductions too.
    a, hidden_a = step_a.run_with_block_outputs(list(prompts_a))
    b, hidden_b = step_b.run_with_block_outputs(list(prompts_b))
    plan = _plan(a, b, align, token)
    token_prob_a, token_prob_b, kl = _run_together(
        plan, (model_a, lens_a, hidden_a), (model_b, lens_b, hidden_b), max_chunk_bytes
    )
    return _assemble(plan, token_prob_a, token_prob_b, kl, source="run together")


def _check_token_argument(token: Any, vocab_size: int) -> None:
    """What of ``token`` can be checked before the models run: its type, an id's range and a
    text's encoding (whether a text is among the tokens decoded is known only after)."""
    if token is None or isinstance(token, torch.Tensor):
        return
    if isinstance(token, str):
        check_str("token", token)
        return
    if isinstance(token, (bool, np.bool_)) or not isinstance(token, (int, np.integer)):
        raise TypeError(
            "token must be None, an int id, a token's text or an [n_inputs, seq] tensor, "
            f"got {type(token).__name__} {token!r:.60}"
        )
    check_int("token", token, 0, vocab_size - 1, "the vocabulary size - 1")


# ---------------------------------------------------------------------------------------------
# The plan: checks, alignment and the chosen token


@dataclass
class _Plan:
    a: LogitLensResult
    b: LogitLensResult
    alignment: Alignment
    token: torch.Tensor  # [n_inputs, seq_a]
    token_rule: str
    aligned: torch.Tensor  # [rows_a, n_inputs, seq_a] bool


def _plan(a: Any, b: Any, align: Any, token: Any) -> _Plan:
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, LogitLensResult):
            raise TypeError(
                f"{name} must be a LogitLensResult (results['logit_lens'] after the LogitLens "
                f"step), got {type(value).__name__}"
            )
        value.validate()
    check_align(align)
    _check_same_vocabulary(a, b)
    alignment = align_results(a, b, align)
    chosen, rule = _chosen_token(a, token)
    valid_a = a.predicted_tokens >= 0
    valid_b = _gather(b.predicted_tokens >= 0, alignment.layer_rows, alignment.positions, False)
    aligned = valid_a & valid_b
    return _Plan(a, b, alignment, chosen, rule, aligned)


def _check_same_vocabulary(a: LogitLensResult, b: LogitLensResult) -> None:
    if a.vocab_size is not None and b.vocab_size is not None and a.vocab_size != b.vocab_size:
        raise ValueError(
            f"a has a vocabulary of {a.vocab_size} tokens and b one of {b.vocab_size}: a "
            "token's probability can only be compared under one tokenizer"
        )
    if a.token_strings and b.token_strings:
        for token_id in sorted(a.token_strings.keys() & b.token_strings.keys()):
            if a.token_strings[token_id] != b.token_strings[token_id]:
                raise ValueError(
                    f"a and b decode token {token_id} differently ({a.token_strings[token_id]!r} "
                    f"and {b.token_strings[token_id]!r}): they use different tokenizers, so "
                    "their token probabilities cannot be compared"
                )


def _chosen_token(a: LogitLensResult, token: Any) -> tuple[torch.Tensor, str]:
    """The token of each position of ``a`` whose probability change is measured."""
    grid = a.attention_mask.shape
    mask = a.attention_mask.bool()
    vocab = a.vocab_size
    if token is None:
        if a.final_tokens is not None:
            return a.final_tokens.clone(), "final prediction of a"
        last = a.n_model_layers
        if last is None or a.layers[-1] != last - 1:
            raise ValueError(
                "token=None takes a's final prediction, but a has neither final_tokens nor its "
                "model's last layer: pass token= (an id, a token's text or an [n_inputs, seq] "
                "tensor)"
            )
        return a.predicted_tokens[-1].clone(), "final prediction of a"
    if isinstance(token, str):
        strings = a.token_strings or {}
        ids = sorted(i for i, text in strings.items() if text == token)
        if not ids:
            raise ValueError(
                f"token {token!r} is not among the tokens a decoded (its prompts, predictions "
                "and top-k); pass its id instead"
            )
        chosen = torch.full(grid, ids[0], dtype=torch.long)
        return chosen.masked_fill(~mask, -1), f"token {token!r}"
    if isinstance(token, (bool, np.bool_)):
        raise TypeError(f"token must be None, an int, a str or a tensor, got {token!r}")
    if isinstance(token, (int, np.integer)):
        high = (vocab - 1) if vocab else None
        check_int("token", token, 0, high, "the vocabulary size - 1" if vocab else None)
        chosen = torch.full(grid, int(token), dtype=torch.long)
        return chosen.masked_fill(~mask, -1), f"token {int(token)}"
    if isinstance(token, torch.Tensor):
        if tuple(token.shape) != tuple(grid) or token.dtype.is_floating_point:
            raise ValueError(
                f"token as a tensor must hold integer ids of shape {tuple(grid)} (a's "
                f"[n_inputs, seq]), got {token.dtype} of shape {tuple(token.shape)}"
            )
        chosen = token.detach().cpu().long().masked_fill(~mask, -1)
        if vocab and bool((chosen >= vocab).any()):
            raise ValueError(f"token holds ids of {vocab} or more (the vocabulary size)")
        return chosen, "per-position tokens"
    raise TypeError(
        f"token must be None, an int id, a token's text or an [n_inputs, seq] tensor, "
        f"got {type(token).__name__} {token!r}"
    )


# ---------------------------------------------------------------------------------------------
# From the results alone


def _gather(
    values_b: torch.Tensor, layer_rows: list[int], positions: torch.Tensor, fill: Any
) -> torch.Tensor:
    """``b``'s ``[rows_b, n_inputs, seq_b, ...]`` field on ``a``'s grid ``[rows_a, n, seq_a, ...]``.

    ``layer_rows`` and ``positions`` are the alignment's maps; cells without a partner get
    ``fill`` (``False`` for a boolean field).
    """
    rows = torch.tensor(layer_rows, dtype=torch.long)
    n_inputs = positions.shape[0]
    prompts = torch.arange(n_inputs).unsqueeze(1).expand_as(positions)
    picked = values_b[rows.clamp_min(0)][:, prompts, positions.clamp_min(0)]
    ok = (rows >= 0).view(-1, 1, 1) & (positions >= 0).unsqueeze(0)
    while ok.dim() < picked.dim():
        ok = ok.unsqueeze(-1)
    return picked.masked_fill(~ok, fill) if picked.dtype != torch.bool else picked & ok


def _cell_values(values: torch.Tensor) -> torch.Tensor:
    """A per-cell field as float32 values: an integer field's -1 (a rank without one) is NaN."""
    values = values.detach().cpu()
    if values.dtype.is_floating_point:
        return values.float()
    return values.float().masked_fill(values < 0, float("nan"))


def _on_b_grid(token_a: torch.Tensor, alignment: Alignment, b: LogitLensResult) -> torch.Tensor:
    """The chosen token of each position of ``a`` moved to its partner position in ``b``."""
    out = torch.full(tuple(b.attention_mask.shape), -1, dtype=torch.long)
    prompts, seqs = torch.nonzero(alignment.positions >= 0, as_tuple=True)
    out[prompts, alignment.positions[prompts, seqs]] = token_a[prompts, seqs]
    return out


def _token_probs(result: LogitLensResult, token: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The probability of ``token`` (``[rows, n, seq]`` ids) in each cell, where known exactly.

    Known from ``all_probs``; else from ``final_token_probs`` where the token is the result's
    final prediction; else from the top-k where it is among them. Returns (values, known).
    """
    shape = tuple(result.max_probs.shape)
    values = torch.full(shape, float("nan"))
    known = torch.zeros(shape, dtype=torch.bool)
    valid = (token >= 0) & (result.predicted_tokens >= 0)
    if result.all_probs is not None:
        got = result.all_probs.gather(-1, token.clamp_min(0).unsqueeze(-1)).squeeze(-1).float()
        return got.masked_fill(~valid, float("nan")), valid
    if result.topk_tokens is not None and result.topk_probs is not None:
        hit = result.topk_tokens == token.unsqueeze(-1)
        found = hit.any(-1) & valid
        probs = (result.topk_probs.float() * hit).sum(-1)
        values = torch.where(found, probs, values)
        known |= found
    else:
        found = (result.predicted_tokens == token) & valid
        values = torch.where(found, result.max_probs.float(), values)
        known |= found
    if result.final_tokens is not None and result.final_token_probs is not None:
        final = (result.final_tokens.unsqueeze(0) == token) & valid
        final &= torch.isfinite(result.final_token_probs)
        values = torch.where(final, result.final_token_probs.float(), values)
        known |= final
    return values, known


def _kl_from_full(
    a: LogitLensResult, b: LogitLensResult, alignment: Alignment, aligned: torch.Tensor
) -> torch.Tensor:
    """KL(a ‖ b) in bits from both results' ``all_probs``, one row of ``a`` at a time."""
    kl = torch.full(tuple(a.max_probs.shape), float("nan"))
    prompts, seqs = torch.nonzero(alignment.positions >= 0, as_tuple=True)
    seqs_b = alignment.positions[prompts, seqs]
    any_token = torch.zeros(len(prompts), 1, dtype=torch.long)
    buffers = Buffers()
    for row, row_b in enumerate(alignment.layer_rows):
        if row_b < 0 or len(prompts) == 0:
            continue
        # Log-probabilities are logits of the same distributions: the one KL reads them.
        log_p = a.all_probs[row, prompts, seqs].float().log()
        log_q = b.all_probs[row_b, prompts, seqs_b].float().log()
        kl[row, prompts, seqs] = reduce_pair(log_p, log_q, any_token, buffers)[2]
    return kl.masked_fill(~aligned, float("nan"))


def _assemble(
    plan: _Plan,
    token_prob_a: torch.Tensor,
    token_prob_b: torch.Tensor,
    kl: torch.Tensor | None,
    source: str,
) -> LensComparison:
    a, b, alignment = plan.a, plan.b, plan.alignment
    aligned = plan.aligned
    token_prob_a = token_prob_a.masked_fill(~aligned, float("nan"))
    token_prob_b = token_prob_b.masked_fill(~aligned, float("nan"))
    predicted_b = _gather(b.predicted_tokens, alignment.layer_rows, alignment.positions, -1)
    top1_differs = (a.predicted_tokens != predicted_b) & aligned
    return LensComparison(
        a=a,
        b=b,
        delta_prob=token_prob_b - token_prob_a,
        token_prob_a=token_prob_a,
        token_prob_b=token_prob_b,
        top1_differs=top1_differs,
        kl_a_to_b=None if kl is None else kl.masked_fill(~aligned, float("nan")),
        aligned=aligned,
        token=plan.token,
        token_rule=plan.token_rule,
        layer_rows=list(alignment.layer_rows),
        b_layers=list(alignment.b_layers),
        positions=alignment.positions,
        align=alignment.mode,
        alignment_note=alignment.note,
        source=source,
        labels=(_label(a), _label(b)),
    )


def _label(result: LogitLensResult) -> str:
    from pathlib import Path

    name = result.model_name or "model"
    name = Path(name).name if Path(name).is_dir() else name
    title, kind = title_of(result), result.lens_kind or "logit"
    # Mid-sentence, "Tuned lens" reads "tuned lens"; a title of the user's stays as written.
    if title == f"{kind[:1].upper()}{kind[1:]} lens":
        title = f"{kind} lens"
    return f"{name} ({title})"


# ---------------------------------------------------------------------------------------------
# Both sides run together, reduced in chunks


def _run_together(
    plan: _Plan,
    side_a: tuple[Any, Any, dict[int, torch.Tensor]],
    side_b: tuple[Any, Any, dict[int, torch.Tensor]],
    max_chunk_bytes: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """KL(a ‖ b) and the chosen token's two probabilities at every aligned cell."""
    a, b, alignment = plan.a, plan.b, plan.alignment
    pairs = [(row, rb) for row, rb in enumerate(alignment.layer_rows) if rb >= 0]
    model_a, lens_a, hidden_a = side_a  # block outputs {layer: [n_inputs * seq, d_model]}
    model_b, lens_b, hidden_b = side_b
    seq_a, seq_b = a.attention_mask.shape[1], b.attention_mask.shape[1]
    prompts, seqs = torch.nonzero(alignment.positions >= 0, as_tuple=True)
    rows_a = prompts * seq_a + seqs
    rows_b = prompts * seq_b + alignment.positions[prompts, seqs]
    tokens = plan.token[prompts, seqs]

    shape = tuple(a.max_probs.shape)
    token_prob_a = torch.full(shape, float("nan"))
    token_prob_b = torch.full(shape, float("nan"))
    kl = torch.full(shape, float("nan"))
    vocab = int(model_a.vocab_size)
    buffers = Buffers()
    with torch.inference_mode():
        for chunk in chunks(max_chunk_bytes, vocab, len(rows_a)):
            ra, rb_rows, tok = rows_a[chunk], rows_b[chunk], tokens[chunk]
            where = (prompts[chunk], seqs[chunk])
            has_token = tok >= 0
            index = tok.clamp_min(0).unsqueeze(-1)
            for row, row_b in pairs:
                layer_a, layer_b = a.layers[row], b.layers[row_b]
                states_a = hidden_a[layer_a].index_select(0, ra.to(hidden_a[layer_a].device))
                states_b = hidden_b[layer_b].index_select(0, rb_rows.to(hidden_b[layer_b].device))
                n = len(ra)
                device = states_a.device
                logits_a = _logits(
                    model_a, lens_a, layer_a, states_a, buffers.get("logits_a", n, vocab, device)
                )
                logits_b = _logits(
                    model_b,
                    lens_b,
                    layer_b,
                    states_b,
                    buffers.get("logits_b", n, vocab, states_b.device),
                )
                if logits_b.device != device:  # two models on two devices
                    logits_b = logits_b.to(device)
                values = reduce_pair(logits_a, logits_b, index.to(device), buffers)
                pa, pb, kl_bits = (v.cpu() for v in values)
                token_prob_a[row][where] = pa.masked_fill(~has_token, float("nan"))
                token_prob_b[row][where] = pb.masked_fill(~has_token, float("nan"))
                kl[row][where] = kl_bits
    return token_prob_a, token_prob_b, kl


def _logits(
    model: Any, lens: Any, layer: int, states: torch.Tensor, out: torch.Tensor
) -> torch.Tensor:
    """One layer's lens logits on plain hidden states, into ``out`` (float32); a lens that
    makes its own (a Patchscope runs the model) makes them."""
    return as_lens(lens).logits(model, layer, states, int(model.n_layers), out=out)
