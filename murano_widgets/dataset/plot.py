"""``plot_dataset``: the publication figure of a :class:`~murano_widgets.dataset.lens_dataset.LensDataset`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from murano_widgets._checks import check_axes, check_choice
from murano_widgets.lenses import lens_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from murano_widgets.dataset.lens_dataset import LensDataset

__all__ = [
    "DATASET_METRICS",
    "SERIES_COLOURS",
    "SERIES_LINESTYLES",
    "lens_look",
    "plot_dataset",
    "series_look",
]

#: The series palette of the widgets' charts, its light values (a figure is drawn on white): the
#: ``--murano-series-*`` properties of js/src/theme.css, in order (tests/test_dataset.py checks
#: the two agree). Okabe–Ito's hues darkened for 3:1 on white; every pair stays apart in
#: simulated protanopia, deuteranopia and tritanopia (js/tests/palette.test.mjs).
SERIES_COLOURS = ("#006ab0", "#bd4d01", "#058f60", "#a9799a", "#c38602", "#349bd2")
#: Line styles for the sets beyond the palette, as the widget dashes them (theme.js's
#: SERIES_DASHES): set ``k`` draws in colour ``k mod 6`` with style ``k // 6`` (mod 4).
SERIES_LINESTYLES = ("-", (0, (6, 3)), (0, (1.5, 3)), (0, (9, 3, 1.5, 3)))

# metric name -> (summary column prefix, axis label, whether it is a probability in [0, 1])
DATASET_METRICS: dict[str, tuple[str, str, bool]] = {
    "answer_prob": ("answer_prob", "probability of the answer (mean)", True),
    "top1_accuracy": ("top1_accuracy", "answer is the top-1 token (share of prompts)", True),
    "committed": (
        "committed",
        "answer committed: top-1 from this layer on (share of prompts)",
        True,
    ),
}


def plot_dataset(
    dataset: LensDataset,
    metric: str = "answer_prob",
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """Mean per layer with its bootstrap interval shaded, one line per answer set (and lens).

    With several lenses side by side, each lens has a colour of the series palette and each
    answer set a line style (one lens: each answer set a colour, as in the widget).

    Everything is drawn as vector paths (nothing rasterized), so ``fig.savefig("f.pdf")`` or
    ``.svg`` gives a figure that scales.

    Args:
        dataset: The data set.
        metric: ``"answer_prob"`` (mean probability of the answer), ``"top1_accuracy"``
            (share of prompts whose answer is the top-1 token) or ``"committed"`` (share of
            prompts whose answer is committed at or before the layer: the top-1 there and at
            every later layer; the distribution of the commitment layer, see
            :meth:`~murano_widgets.LensDataset.commitment_layers`).
        ci, n_boot, seed: The intervals (see :meth:`LensDataset.summary`).
        ax: Axes to draw into; a new figure is made if ``None``.
        title: The title; default names the model and the number of prompts.

    Returns:
        The figure.

    Raises:
        ValueError: For an unknown ``metric``.
    """
    import matplotlib.pyplot as plt

    check_choice("metric", metric, DATASET_METRICS)
    check_axes(ax)
    column, label, _ = DATASET_METRICS[metric]
    table = dataset.summary(ci=ci, n_boot=n_boot, seed=seed)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    else:
        fig = ax.figure
    mean = f"{column}_mean" if metric == "answer_prob" else column
    lenses = dataset.lens_names
    sets = list(dataset.answers) if dataset.named_sets else [None]
    groups = []
    for lens_index, lens in enumerate(lenses or [None]):
        for set_index, name in enumerate(sets):
            rows = table
            if lens is not None:
                rows = rows[rows["lens"] == lens]
            if name is not None:
                rows = rows[rows["answer_set"] == name]
            groups.append((lens_index, lens, set_index, name, rows))
    titles = {entry["name"]: entry["title"] for entry in dataset.provenance.get("lenses", [])}
    for k, (lens_index, lens, set_index, name, rows) in enumerate(groups):
        counted = int(rows["n_prompts"].iloc[0])
        what = " · ".join(
            part
            for part in (name, None if lens is None else lens_label(lens, titles.get(lens, lens)))
            if part
        )
        line_label = f"{what} (n={counted})" if what else f"n={counted}"
        colour, style = series_look(k) if lens is None else lens_look(lens_index, set_index)
        ax.plot(
            rows["layer"],
            rows[mean],
            color=colour,
            linestyle=style,
            marker="o",
            markersize=3,
            label=line_label,
        )
        ax.fill_between(
            rows["layer"],
            rows[f"{column}_ci_low"],
            rows[f"{column}_ci_high"],
            color=colour,
            alpha=0.2,
            linewidth=0,
        )
    ax.set_xlabel("layer")
    ax.set_ylabel(label)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(dataset.layers if len(dataset.layers) <= 16 else ax.get_xticks())
    ax.grid(alpha=0.3)
    ax.legend(title=f"{round(ci * 100)}% bootstrap interval", fontsize="small")
    model = dataset.provenance.get("model_name") or "model"
    default = f"{_short(model)}: {dataset.n_prompts} prompts"
    if lenses:
        default += f", {len(lenses)} lenses"
    ax.set_title(title if title is not None else default)
    return fig


def series_look(k: int) -> tuple[str, Any]:
    """The colour and line style of the k-th series (the widget's ``seriesLook``): colour
    ``k mod 6``, style ``k // 6`` (mod 4)."""
    n = len(SERIES_COLOURS)
    return SERIES_COLOURS[k % n], SERIES_LINESTYLES[k // n % len(SERIES_LINESTYLES)]


def lens_look(lens_index: int, set_index: int) -> tuple[str, Any]:
    """Lenses side by side: lens ``i`` in colour ``i mod 6``, answer set ``j`` in style
    ``j mod 4`` (the widget's ``lensSeriesLook``), so a lens keeps its colour across sets."""
    return (
        SERIES_COLOURS[lens_index % len(SERIES_COLOURS)],
        SERIES_LINESTYLES[set_index % len(SERIES_LINESTYLES)],
    )


def _short(name: Any) -> str:
    text = str(name).rstrip("/\\")
    return text.replace("\\", "/").rsplit("/", 1)[-1] or text
