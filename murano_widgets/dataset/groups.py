"""The latent-language figure: token groups' probabilities per layer over many prompts.

Wendler et al. ("Do Llamas work in English?", 2024) read, on translation prompts, the
probability of the answer word in the target language and of the same word in English, at
each prompt's last position and every layer, and draw their means over the prompts with
intervals (and the entropy beside them). :func:`group_summary` makes that table from a result
with groups (``run_logit_lens(model, prompts, groups=..., positions="last")``),
:func:`plot_groups` draws it, and :func:`translation_prompts` builds their few-shot
translation prompts from word pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets.dataset.plot import series_look
from murano_widgets.dataset.stats import bootstrap_means, check_summary_args

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = ["group_summary", "group_values", "plot_groups", "translation_prompts"]


def group_values(result: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Each prompt's numbers at its last real position.

    Args:
        result: A :class:`~murano_widgets.LogitLensResult` with groups.

    Returns:
        The groups' names, ``[n_prompts, n_layers, n_groups]`` their probabilities and
        ``[n_prompts, n_layers]`` the entropy in bits (NaN where the result has none).

    Raises:
        ValueError: For a result without groups.
    """
    if getattr(result, "group_probs", None) is None or not result.group_names:
        raise ValueError(
            "this result has no token groups: run it with groups={...} "
            "(run_logit_lens(model, prompts, groups=..., positions='last'))"
        )
    last = [int(result.positions(p)[-1]) for p in range(result.n_inputs)]
    prompts = np.arange(result.n_inputs)
    probs = result.group_probs.numpy()[:, prompts, last].transpose(1, 0, 2)
    entropy = (
        result.entropy.numpy()[:, prompts, last].T
        if result.entropy is not None
        else np.full(probs.shape[:2], np.nan)
    )
    return list(result.group_names), probs.astype(np.float64), entropy.astype(np.float64)


def group_summary(
    result: Any, *, ci: float = 0.95, n_boot: int = 1000, seed: int | None = 0
) -> pd.DataFrame:
    """Per layer, each group's mean probability over the prompts (at their last position)
    with a percentile-bootstrap interval, and the mean entropy with its own.

    Args:
        result: A :class:`~murano_widgets.LogitLensResult` with groups (``positions="last"``
            is all it needs).
        ci, n_boot, seed: The intervals, as :meth:`LensDataset.summary`'s.

    Returns:
        One row per layer: ``layer``, then for each group ``{name}_mean``, ``{name}_ci_low``,
        ``{name}_ci_high``, then ``entropy_mean``, ``entropy_ci_low``, ``entropy_ci_high``.
    """
    import pandas as pd

    ci, n_boot, seed = check_summary_args(ci, n_boot, seed)
    names, probs, entropy = group_values(result)
    values = np.concatenate([probs, entropy[..., None]], axis=-1)  # [prompts, layers, g + 1]
    stats = bootstrap_means(values, ci=ci, n_boot=n_boot, seed=seed)
    table: dict[str, Any] = {"layer": list(result.layers)}
    for g, name in enumerate([*names, "entropy"]):
        table[f"{name}_mean"] = stats["mean"][:, g]
        table[f"{name}_ci_low"] = stats["low"][:, g]
        table[f"{name}_ci_high"] = stats["high"][:, g]
    return pd.DataFrame(table)


def plot_groups(
    result: Any,
    groups: Sequence[str] | None = None,
    *,
    entropy: bool = False,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Wendler's figure: each group's mean probability per layer, with its interval as a
    band, and optionally the mean entropy (bits) on a second axis.

    Args:
        result: A :class:`~murano_widgets.LogitLensResult` with groups.
        groups: The groups to draw (default: all), by name.
        entropy: Also draw the mean entropy, dashed, on a right-hand axis.
        ci, n_boot, seed: The intervals (see :func:`group_summary`).
        ax: The matplotlib axes to draw on (default: a new figure's).
        title: The axes' title.

    Returns:
        The axes.

    Raises:
        ValueError: For a result without groups, or a group it does not have.
    """
    import matplotlib.pyplot as plt

    table = group_summary(result, ci=ci, n_boot=n_boot, seed=seed)
    names = list(result.group_names)
    chosen = names if groups is None else list(groups)
    unknown = [name for name in chosen if name not in names]
    if unknown or not chosen:
        raise ValueError(f"groups must name some of this result's groups {names}, got {chosen}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    layers = table["layer"].to_numpy()
    for k, name in enumerate(chosen):
        colour, style = series_look(k)
        ax.plot(layers, table[f"{name}_mean"], color=colour, linestyle=style, label=name)
        ax.fill_between(
            layers, table[f"{name}_ci_low"], table[f"{name}_ci_high"], color=colour, alpha=0.2
        )
    ax.set_xlabel("layer")
    ax.set_ylabel("probability (mean over prompts)")
    ax.set_ylim(0, 1)
    handles, labels = ax.get_legend_handles_labels()
    if entropy:
        right = ax.twinx()
        right.plot(layers, table["entropy_mean"], color="0.35", linestyle="--", label="entropy")
        right.fill_between(
            layers, table["entropy_ci_low"], table["entropy_ci_high"], color="0.35", alpha=0.12
        )
        right.set_ylabel("entropy (bits)")
        more_handles, more_labels = right.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    ax.legend(handles, labels, loc="upper left", frameon=False)
    if title:
        ax.set_title(title)
    return ax


def translation_prompts(
    pairs: Sequence[tuple[str, str]],
    source: str = "Français",
    target: str = "中文",
    *,
    shots: int = 4,
    seed: int = 0,
) -> list[str]:
    """Wendler et al.'s few-shot translation prompts, one per pair: ``shots`` other pairs as
    examples, then the pair's source word, left open after the target's opening quote::

        Français: "livre" - 中文: "书"
        ...
        Français: "fleur" - 中文: "

    Args:
        pairs: ``(source word, target word)`` pairs; the examples of one prompt are drawn
            from the other pairs.
        source, target: The languages' names as the prompts write them.
        shots: How many examples each prompt shows.
        seed: The examples' random draw.

    Raises:
        ValueError: For fewer than ``shots + 1`` pairs, or a pair that is not two words.
    """
    pairs = list(pairs)
    for index, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(w, str) and w for w in pair)
        ):
            raise ValueError(f"pairs[{index}] must be two non-empty words, got {pair!r:.60}")
    if not isinstance(shots, int) or shots < 0 or len(pairs) < shots + 1:
        raise ValueError(
            f"shots must be from 0 to len(pairs) - 1 = {len(pairs) - 1}, got {shots!r}"
        )
    rng = np.random.default_rng(seed)
    prompts = []
    for index, (word, _) in enumerate(pairs):
        others = [k for k in range(len(pairs)) if k != index]
        picked: Any = rng.choice(others, size=shots, replace=False) if shots else []
        lines = [f'{source}: "{pairs[k][0]}" - {target}: "{pairs[k][1]}"' for k in picked]
        lines.append(f'{source}: "{word}" - {target}: "')
        prompts.append("\n".join(lines))
    return prompts
