"""The latent-language figure: token groups' probabilities per layer over many prompts.

Wendler et al. ("Do Llamas work in English?", 2024) read, on translation prompts, the
probability of the answer word in the target language and of the same word in English, at
each prompt's last position and every layer, and draw their means over the prompts with
intervals (and the entropy beside them). :func:`group_summary` makes that table from a data set
with groups (``lens_dataset(model, prompts, answers, groups=...)``) or a result with groups
(``run_logit_lens(model, prompts, groups=..., positions="last")``), :func:`plot_groups` draws
it, and :func:`translation_prompts` and :func:`cloze_prompts` build their few-shot
translation and cloze prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets.dataset.stats import bootstrap_means, check_summary_args

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = [
    "cloze_prompts",
    "group_summary",
    "group_values",
    "plot_groups",
    "translation_prompts",
]

#: Wendler's cloze prompts mark the word to guess with this blank.
BLANK = "___"


def _is_dataset(source: Any) -> bool:
    from murano_widgets.dataset.lens_dataset import LensDataset

    return isinstance(source, LensDataset)


def _lens_parts(source: Any, lens: str | None) -> list[tuple[str | None, Any]]:
    """``(lens name, one lens's source)`` for each lens drawn: a data set of lenses side by
    side gives every lens (or the one named), anything else itself."""
    if _is_dataset(source) and source.lens_names is not None:
        names = source.lens_names if lens is None else [lens]
        return [(name, source.lens(name)) for name in names]
    if lens is not None:
        raise ValueError(f"lens={lens!r} names a lens of a data set of lenses side by side")
    return [(None, source)]


def group_values(result: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Each prompt's numbers at its last real position.

    Args:
        result: A :class:`~murano_widgets.LensDataset` made with groups (of one lens: see
            :meth:`~murano_widgets.LensDataset.lens`), or a
            :class:`~murano_widgets.LogitLensResult` with groups.

    Returns:
        The groups' names, ``[n_prompts, n_layers, n_groups]`` their probabilities and
        ``[n_prompts, n_layers]`` the entropy in bits (NaN where the source has none).

    Raises:
        ValueError: For a source without groups.
    """
    if _is_dataset(result):
        return _dataset_values(result)
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


def _dataset_values(dataset: Any) -> tuple[list[str], np.ndarray, np.ndarray]:
    """:func:`group_values` of a data set of one lens."""
    names = dataset.group_names
    if not names:
        raise ValueError(
            "this data set has no token groups: make it with lens_dataset(model, prompts, "
            "answers, groups={...})"
        )
    probs = np.stack([dataset.group_probs[name].T for name in names], axis=-1)
    entropy = dataset.entropy.T if "entropy" in dataset.fields else np.full(probs.shape[:2], np.nan)
    return names, probs.astype(np.float64), entropy.astype(np.float64)


def group_summary(
    result: Any,
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    lens: str | None = None,
) -> pd.DataFrame:
    """Per layer, each group's mean probability over all the prompts (at their last position)
    with a percentile-bootstrap interval, and the mean entropy with its own.

    Args:
        result: A :class:`~murano_widgets.LensDataset` made with groups, or a
            :class:`~murano_widgets.LogitLensResult` with groups (``positions="last"`` is all
            it needs).
        ci, n_boot, seed: The intervals, as :meth:`LensDataset.summary`'s (the same draws:
            every lens's intervals from the same resamples of prompts).
        lens: With a data set of lenses side by side, the one lens to summarise (default:
            every lens, a ``lens`` column telling them apart).

    Returns:
        One row per layer (and lens): ``layer``, then for each group ``{name}_mean``,
        ``{name}_ci_low``, ``{name}_ci_high``, then ``entropy_mean``, ``entropy_ci_low``,
        ``entropy_ci_high``.
    """
    import pandas as pd

    ci, n_boot, seed = check_summary_args(ci, n_boot, seed)
    frames = []
    for lens_name, part in _lens_parts(result, lens):
        names, probs, entropy = group_values(part)
        values = np.concatenate([probs, entropy[..., None]], axis=-1)  # [prompts, layers, g+1]
        stats = bootstrap_means(values, ci=ci, n_boot=n_boot, seed=seed)
        table: dict[str, Any] = {"layer": list(part.layers)}
        for g, name in enumerate([*names, "entropy"]):
            table[f"{name}_mean"] = stats["mean"][:, g]
            table[f"{name}_ci_low"] = stats["low"][:, g]
            table[f"{name}_ci_high"] = stats["high"][:, g]
        frame = pd.DataFrame(table)
        if lens_name is not None:
            frame.insert(0, "lens", lens_name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


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
    lens: str | None = None,
) -> Axes:
    """Wendler's figure: each group's mean probability per layer, with its interval as a
    band, and optionally the mean entropy (bits) on a second axis.

    One call on a data set: ``plot_groups(lens_dataset(model, prompts, answers, groups={"zh":
    [...], "en": [...]}), entropy=True)``.

    Args:
        result: A :class:`~murano_widgets.LensDataset` made with groups, or a
            :class:`~murano_widgets.LogitLensResult` with groups. A data set of lenses side by
            side draws each lens's curves (a colour per group, a line style per lens): "is the
            English phase the lens or the model?" in one figure.
        groups: The groups to draw (default: all), by name.
        entropy: Also draw the mean entropy, dashed, on a right-hand axis (one lens: its
            entropy; lenses side by side: each lens's, in its line style).
        ci, n_boot, seed: The intervals (see :func:`group_summary`).
        ax: The matplotlib axes to draw on (default: a new figure's).
        title: The axes' title.
        lens: With lenses side by side, the one lens to draw (default: all).

    Returns:
        The axes.

    Raises:
        ValueError: For a source without groups, or a group it does not have.
    """
    import matplotlib.pyplot as plt

    from murano_widgets.dataset.plot import SERIES_LINESTYLES, series_look

    parts = _lens_parts(result, lens)
    names = group_values(parts[0][1])[0]  # raises for a source without groups
    chosen = names if groups is None else list(groups)
    unknown = [name for name in chosen if name not in names]
    if unknown or not chosen:
        raise ValueError(f"groups must name some of this result's groups {names}, got {chosen}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    right = ax.twinx() if entropy else None
    for k, (lens_name, part) in enumerate(parts):
        table = group_summary(part, ci=ci, n_boot=n_boot, seed=seed)
        layers = table["layer"].to_numpy()
        lens_style = SERIES_LINESTYLES[k % len(SERIES_LINESTYLES)]
        suffix = "" if lens_name is None else f" ({lens_name})"
        for g, name in enumerate(chosen):
            colour, style = series_look(g)
            ax.plot(
                layers,
                table[f"{name}_mean"],
                color=colour,
                linestyle=style if lens_name is None else lens_style,
                label=f"{name}{suffix}",
            )
            ax.fill_between(
                layers, table[f"{name}_ci_low"], table[f"{name}_ci_high"], color=colour, alpha=0.2
            )
        if right is not None:
            right.plot(
                layers,
                table["entropy_mean"],
                color="0.35",
                linestyle="--" if lens_name is None else lens_style,
                label=f"entropy{suffix}",
            )
            right.fill_between(
                layers, table["entropy_ci_low"], table["entropy_ci_high"], color="0.35", alpha=0.12
            )
    ax.set_xlabel("layer")
    ax.set_ylabel("probability (mean over prompts)")
    ax.set_ylim(0, 1)
    handles, labels = ax.get_legend_handles_labels()
    if right is not None:
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


def cloze_prompts(
    items: Sequence[tuple[str, str]],
    *,
    answer_label: str = "Answer",
    shots: int = 2,
    seed: int = 0,
) -> list[str]:
    """Wendler et al.'s few-shot cloze prompts, one per item: ``shots`` other items as solved
    examples, then the item's sentence with its answer left open after the opening quote::

        A "___" is used to read stories. Answer: "book".
        A "___" is a large body of water surrounded by land. Answer: "lake".
        A "___" is often given as a gift and can be found in gardens. Answer: "

    Their cloze notebook draws two examples per prompt from the other words of one language
    (``answer_label="Réponse "`` in French writes ``Réponse : "``); the groups to track are the
    word in that language and the same word in English, one per prompt
    (``lens_dataset(model, prompts, answers, groups={"fr": [...], "en": [...]})``).

    Args:
        items: ``(sentence, word)`` pairs: a sentence that holds the blank ``"___"`` where
            the word goes (in quotes, as theirs do), and the word.
        answer_label: What introduces the answer (its colon and quote are added).
        shots: How many solved examples each prompt shows.
        seed: The examples' random draw.

    Raises:
        ValueError: For fewer than ``shots + 1`` items, an item that is not two non-empty
            strings, or a sentence without the blank.
    """
    items = list(items)
    for index, item in enumerate(items):
        if (
            not isinstance(item, (tuple, list))
            or len(item) != 2
            or not all(isinstance(w, str) and w.strip() for w in item)
        ):
            raise ValueError(
                f"items[{index}] must be a (sentence, word) pair of non-empty strings, got "
                f"{item!r:.60}"
            )
        if BLANK not in item[0]:
            raise ValueError(
                f"items[{index}]'s sentence must hold the blank {BLANK!r} where the word goes, "
                f"got {item[0]!r:.60}"
            )
    if not isinstance(answer_label, str):
        raise ValueError(f"answer_label must be a string, got {answer_label!r:.60}")
    if not isinstance(shots, int) or isinstance(shots, bool) or not 0 <= shots < len(items):
        raise ValueError(
            f"shots must be from 0 to len(items) - 1 = {len(items) - 1}, got {shots!r}"
        )
    rng = np.random.default_rng(seed)
    prompts = []
    for index, (sentence, _) in enumerate(items):
        others = [k for k in range(len(items)) if k != index]
        picked: Any = rng.choice(others, size=shots, replace=False) if shots else []
        lines = [f'{items[k][0]} {answer_label}: "{items[k][1]}".' for k in picked]
        lines.append(f'{sentence} {answer_label}: "')
        prompts.append("\n".join(lines))
    return prompts
