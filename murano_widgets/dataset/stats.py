"""Array work behind :class:`~murano_widgets.dataset.lens_dataset.LensDataset`'s summaries: per-layer means
with percentile-bootstrap intervals over prompts, where each prompt's answer commits, and the
per-component means of the direct logit attribution (one bootstrap for all of them:
:func:`bootstrap_means`)."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np

from murano_widgets._checks import check_int

__all__ = [
    "bootstrap_means",
    "check_summary_args",
    "commitment_layers",
    "committed_from",
    "component_parts",
    "contribution_stats",
    "set_summary",
    "summary_columns",
]

# Resamples are drawn in blocks of about this many prompt indices, so that the index and count
# matrices stay a few tens of MB whatever the number of prompts and resamples.
_BLOCK_ELEMENTS = 1 << 22


MAX_BOOT = 1_000_000


def check_summary_args(ci: Any, n_boot: Any, seed: Any) -> tuple[float, int, int | None]:
    """Checks ``summary``'s interval settings.

    Raises:
        ValueError: For ``ci`` outside (0, 1), ``n_boot`` below 1, or a negative ``seed``.
        TypeError: For a ``ci`` that is not a number or a ``seed`` that is not an int or None.
    """
    if isinstance(ci, bool) or not isinstance(ci, (int, float, np.integer, np.floating)):
        raise TypeError(f"ci must be a number between 0 and 1 (e.g. 0.95), got {ci!r}")
    if not 0 < float(ci) < 1 or math.isnan(float(ci)):
        raise ValueError(f"ci must be between 0 and 1 exclusive (e.g. 0.95), got {ci!r}")
    # Each resample is a row of counts over the prompts: a million is far past where the
    # interval's digits stop moving, and beyond it numpy runs out of array dimensions.
    n_boot = check_int("n_boot", n_boot, 1, MAX_BOOT, "a million resamples")
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
        seed = check_int("seed", seed, 0, None, None)
    return float(ci), n_boot, seed


def bootstrap_means(
    values: np.ndarray, *, ci: float, n_boot: int, seed: int | None, overwrite: bool = False
) -> dict[str, np.ndarray]:
    """Means over axis 0 with percentile-bootstrap intervals, ignoring NaN.

    Resample ``b`` is ``rng.integers(0, n, size=n, dtype=np.int32)`` with
    ``rng = np.random.default_rng(seed)``, drawn in order (the same stream as one draw per
    resample: 32-bit draws carry no state between calls beyond the generator's own). A
    resample's mean is the mean of the finite values it picked, computed for every column at
    once as ``counts @ values / counts @ finite`` from each prompt's pick count.

    Memory: the values as float64 (one copy, or none with ``overwrite``), each distinct
    pattern of missing values once (usually one or two, not one per column), and a block of
    pick counts of about 32 MB, whatever ``n_boot``. At a million prompts and six layers
    (18 columns) that is about 150 MB, and each resample costs one pass over the values.

    Args:
        values: ``[n, ...]`` floats, NaN where missing.
        ci: The interval's coverage.
        n_boot: The number of resamples.
        seed: The generator's seed.
        overwrite: ``values`` is a float64 array the caller no longer needs: its missing
            entries are zeroed in place rather than in a copy.

    Returns:
        ``mean``, ``low`` and ``high``, each of ``values.shape[1:]``.
    """
    n = values.shape[0]
    shape = values.shape[1:]
    if n == 0:  # an answer set with no answers: no mean, no interval
        empty = np.full(shape, np.nan)
        return {"mean": empty, "low": empty.copy(), "high": empty.copy()}
    flat = values.reshape(n, -1)
    if not (overwrite and flat.dtype == np.float64 and np.shares_memory(flat, values)):
        flat = flat.astype(np.float64)
    finite = np.isfinite(flat)
    flat[~finite] = 0.0
    # The columns' patterns of finite values, each once: counts @ pattern is the number of
    # finite values a resample picked, shared by every column of that pattern.
    # (np.unique(axis=1) would view each column as one structured value of n fields: slow.)
    first: dict[bytes, int] = {}
    which = np.array(
        [first.setdefault(np.packbits(column).tobytes(), len(first)) for column in finite.T],
        dtype=np.int64,
    )
    weight = np.empty((n, len(first)))
    for column, index in zip(finite.T, which, strict=True):
        weight[:, index] = column
    del finite
    with np.errstate(all="ignore"):
        mean = flat.sum(axis=0) / weight.sum(axis=0)[which]
    boots = np.empty((n_boot, flat.shape[1]))
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // max(n, 1))
    counts = np.empty((min(block, n_boot), n))
    for start in range(0, n_boot, block):
        k = min(block, n_boot - start)
        picks = rng.integers(0, n, size=(k, n), dtype=np.int32)
        for row in range(k):
            counts[row] = np.bincount(picks[row], minlength=n)
        with np.errstate(all="ignore"):
            boots[start : start + k] = (counts[:k] @ flat) / (counts[:k] @ weight)[:, which]
    tail = (1.0 - ci) / 2.0 * 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-missing column: NaN, said so
        low, high = np.nanpercentile(boots, [tail, 100.0 - tail], axis=0)
    return {"mean": mean.reshape(shape), "low": low.reshape(shape), "high": high.reshape(shape)}


def committed_from(ranks: np.ndarray) -> np.ndarray:
    """Where the answer is the top-1 at a layer and at every later one: ``[..., n_layers]``
    booleans from ``[..., n_layers]`` ranks (rank 0 = top-1; -1, no value, is not top-1).

    Row ``j`` is True when the answer is the top-1 at layer column ``j`` and every column after
    it, through the last: a reverse running AND.
    """
    top1 = np.asarray(ranks) == 0
    return np.flip(np.logical_and.accumulate(np.flip(top1, axis=-1), axis=-1), axis=-1)


def commitment_layers(ranks: np.ndarray, layers: list[int]) -> np.ndarray:
    """Each prompt's commitment layer: the first of ``layers`` from which its answer stays the
    top-1 through the last of them; -1 where it never does (not the top-1 at the last layer, or
    no answer).

    Args:
        ranks: ``[n_prompts, n_layers]`` the answer's rank (0 = top-1, -1 = no value).
        layers: The model layer of each column.

    Returns:
        ``[n_prompts]`` int64 model layers, or -1.
    """
    committed = committed_from(ranks)
    first = committed.argmax(axis=-1)
    return np.where(committed.any(axis=-1), np.asarray(layers, dtype=np.int64)[first], -1)


def summary_columns(fields: tuple[str, ...]) -> list[str]:
    """The per-layer columns :func:`set_summary` gives for the metric ``fields``, in order."""
    answer = ["answer_prob_mean", "answer_prob_ci_low", "answer_prob_ci_high"]
    answer += ["top1_accuracy", "top1_accuracy_ci_low", "top1_accuracy_ci_high"]
    answer.append("answer_rank_median")
    metrics = [f"{field}_{what}" for field in fields for what in ("mean", "ci_low", "ci_high")]
    return [*answer, *metrics, "committed", "committed_ci_low", "committed_ci_high"]


def set_summary(
    probs: np.ndarray,
    ranks: np.ndarray,
    metrics: dict[str, np.ndarray],
    ci: float,
    n_boot: int,
    seed: int | None,
) -> dict[str, np.ndarray]:
    """The per-layer columns of ``LensDataset.summary`` for one answer set's prompts.

    Args:
        probs, ranks: ``[n_prompts, n_layers]`` the answer's probability and rank (-1: none).
        metrics: ``{field: [n_prompts, n_layers]}`` each metric field (NaN, or -1 for a
            rank: no value); each gets ``{field}_mean`` with its interval.
        ci, n_boot, seed: The intervals (see :func:`bootstrap_means`).
    """
    rank_valid = ranks >= 0
    # One bootstrap for every column: each is resampled with the same prompts (adding a
    # column changes neither the draws nor the other columns' intervals). They are written
    # into one float64 array, which the bootstrap then works in (no other copy of them).
    values = np.empty((*probs.shape, 3 + len(metrics)))
    values[..., 0] = probs
    values[..., 1] = ranks == 0
    values[..., 1][~rank_valid] = np.nan
    # Committed by a layer: a prompt whose answer is the top-1 there and through the last layer;
    # a prompt never committing (or whose rank there has no value) counts as not committed.
    values[..., 2] = committed_from(ranks)
    for k, field_values in enumerate(metrics.values()):
        values[..., 3 + k] = field_values
        if field_values.dtype.kind == "i":  # a rank: -1 is no value
            values[..., 3 + k][field_values < 0] = np.nan
    stats = bootstrap_means(values, ci=ci, n_boot=n_boot, seed=seed, overwrite=True)
    del values
    with np.errstate(all="ignore"):
        median = np.array(
            [
                np.median(ranks[rank_valid[:, j], j]) if rank_valid[:, j].any() else np.nan
                for j in range(ranks.shape[1])
            ]
        )
    # The columns of summary_columns, in its order: each bootstrap column's mean, low, high.
    order = [0, 1, *range(3, 3 + len(metrics)), 2]
    triples = [
        column
        for j in order
        for column in (stats["mean"][:, j], stats["low"][:, j], stats["high"][:, j])
    ]
    columns = [*triples[:6], median, *triples[6:]]
    return dict(zip(summary_columns(tuple(metrics)), columns, strict=True))


# "L3.attn", "L3.mlp", "L3.attn_bias", "L3.H7" (see the step's component_labels).
_LAYER_COMPONENT = re.compile(r"L(\d+)\.(.+)")
_HEAD = re.compile(r"H(\d+)")


def component_parts(label: str) -> tuple[int | None, str, int | None]:
    """A component label's ``(layer, kind, head)``.

    ``"embed"`` is ``(None, "embed", None)``; ``"L3.attn"`` ``(3, "attn", None)``; ``"L3.mlp"``
    ``(3, "mlp", None)``; ``"L3.attn_bias"`` ``(3, "attn_bias", None)``; ``"L3.H7"``
    ``(3, "head", 7)``. A label of another form keeps its text as the kind (and its layer when
    it starts with ``L<n>.``), so a component the step adds later still gets a row.
    """
    if label == "embed":
        return None, "embed", None
    match = _LAYER_COMPONENT.fullmatch(label)
    if match is None:
        return None, label, None
    layer, rest = int(match[1]), match[2]
    head = _HEAD.fullmatch(rest)
    if head is not None:
        return layer, "head", int(head[1])
    return layer, rest, None


def contribution_stats(
    values: np.ndarray, bias: np.ndarray, ci: float, n_boot: int, seed: int | None
) -> dict[str, Any]:
    """Per-component means with bootstrap intervals over the prompts that have a value.

    Args:
        values: ``[n_prompts, C]`` each prompt's direct contributions (NaN: no answer, or no
            foil where foils were given).
        bias: ``[n_prompts]`` the rest of each prompt's logit (NaN likewise).
        ci, n_boot, seed: The intervals (see :func:`bootstrap_means`).

    Returns:
        ``n_prompts`` (the prompts counted), and ``mean``, ``low``, ``high`` of ``[C + 1]``: the
        components in order, then the bias. One bootstrap for all of them, so every component's
        interval comes from the same resamples of prompts.
    """
    has = np.isfinite(bias)
    stacked = np.concatenate(
        [values[has].astype(np.float64), bias[has, None].astype(np.float64)], axis=1
    )
    stats = bootstrap_means(stacked, ci=ci, n_boot=n_boot, seed=seed)
    return {"n_prompts": int(has.sum()), **stats}
