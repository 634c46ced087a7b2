"""The publication figures of a :class:`~murano_widgets.dataset.lens_dataset.LensDataset`:
``plot_dataset`` (a quantity per layer) and ``plot_contributions`` (the direct logit attribution
per component)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets._checks import check_axes, check_choice
from murano_widgets.lenses import lens_label
from murano_widgets.metrics import DATASET_CHART, DATASET_METRICS, nice_ceil

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from murano_widgets.dataset.lens_dataset import LensDataset

__all__ = [
    "ANNOTATE_CELLS",
    "DIVERGING",
    "KIND_COLOURS",
    "SERIES_COLOURS",
    "SERIES_LINESTYLES",
    "lens_look",
    "plot_contributions",
    "plot_dataset",
    "series_look",
]

#: The series palette of the widgets' charts, its light values (a figure is drawn on white): the
#: ``--murano-series-*`` properties of js/src/shared/theme.css, in order (tests/test_dataset.py checks
#: the two agree). Okabe–Ito's hues darkened for 3:1 on white; every pair stays apart in
#: simulated protanopia, deuteranopia and tritanopia (js/tests/palette.test.mjs).
SERIES_COLOURS = ("#006ab0", "#bd4d01", "#058f60", "#a9799a", "#c38602", "#349bd2")
#: Line styles for the sets beyond the palette, as the widget dashes them (theme.js's
#: SERIES_DASHES): set ``k`` draws in colour ``k mod 6`` with style ``k // 6`` (mod 4).
SERIES_LINESTYLES = ("-", (0, (6, 3)), (0, (1.5, 3)), (0, (9, 3, 1.5, 3)))

#: The widgets' diverging scale (js/src/diff/colour.js's DIVERGING, which tests/test_dataset.py
#: checks against): blue (negative) - near-white (0, the middle stop) - orange (positive), after
#: ColorBrewer's Blues and Oranges; blue and orange stay apart for every common colour-vision
#: deficiency.
DIVERGING = (
    "#08519c", "#3182bd", "#6baed6", "#c6dbef", "#f4f4f2", "#fdd0a2", "#fd8d3c", "#e6550d", "#a63603",
)  # fmt: skip
#: The bar colour of each kind of component, from the series palette.
KIND_COLOURS = {
    "embed": SERIES_COLOURS[2],
    "attn": SERIES_COLOURS[0],
    "head": SERIES_COLOURS[0],
    "attn_bias": SERIES_COLOURS[3],
    "mlp": SERIES_COLOURS[1],
}
_OTHER_KIND_COLOUR = SERIES_COLOURS[4]
#: The head grid writes each cell's mean in it up to this many cells (12 layers x 8 heads).
ANNOTATE_CELLS = 96


def plot_dataset(
    dataset: LensDataset,
    metric: str = "answer_prob",
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure | SubFigure:
    """Mean per layer with its bootstrap interval shaded, one line per answer set (and lens).

    With several lenses side by side, each lens has a colour of the series palette and each
    answer set a line style (one lens: each answer set a colour, as in the widget).

    Everything is drawn as vector paths (nothing rasterized), so ``fig.savefig("f.pdf")`` or
    ``.svg`` gives a figure that scales.

    Args:
        dataset: The data set.
        metric: One of :data:`murano_widgets.metrics.DATASET_CHART` (the data set's metrics
            with an interval): ``"answer_prob"`` (mean
            probability of the answer), ``"top1_accuracy"`` (share of prompts whose answer is
            the top-1 token), ``"committed"`` (share of prompts whose answer is committed at
            or before the layer: the top-1 there and at every later layer; the distribution of
            the commitment layer, see :meth:`~murano_widgets.LensDataset.commitment_layers`),
            or a heatmap metric's mean at the prompts' last position (``"entropy"``, ``"kl"``,
            ``"final_prob"``, ``"final_rank"``: every reduced metric of
            :data:`murano_widgets.metrics.METRICS`). A fraction's axis runs from 0 to 1; bits
            and ranks from 0 to a round number above the highest interval.
        ci, n_boot, seed: The intervals (see :meth:`LensDataset.summary`).
        ax: Axes to draw into; a new figure is made if ``None``.
        title: The title; default names the model and the number of prompts.

    Returns:
        The figure.

    Raises:
        ValueError: For an unknown ``metric``.
    """
    import matplotlib.pyplot as plt

    check_choice("metric", metric, DATASET_CHART)
    check_axes(ax)
    charted = [m.name for m in dataset.metrics if m.interval]
    if metric not in charted:
        raise ValueError(
            f"metric must be one of {charted} for this data set (saved by a version that kept "
            f"only the fields {list(dataset.fields)}); got {metric!r}"
        )
    chosen = DATASET_METRICS[metric]
    assert chosen.interval is not None
    mean, (low, high) = chosen.field, chosen.interval
    table = dataset.summary(ci=ci, n_boot=n_boot, seed=seed)
    fig: Figure | SubFigure  # drawn into given axes, the figure they sit in (maybe a subfigure)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    else:
        fig = ax.figure
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
            rows[low],
            rows[high],
            color=colour,
            alpha=0.2,
            linewidth=0,
        )
    ax.set_xlabel("layer")
    ax.set_ylabel(chosen.label[:1].lower() + chosen.label[1:])
    if chosen.unit in ("probability", "share"):
        ax.set_ylim(-0.02, 1.02)
    else:  # bits or ranks: from 0 to a round number above every interval, as the widget's axis
        top = np.nanmax(table[[mean, high]].to_numpy(dtype=np.float64), initial=0.0)
        ax.set_ylim(0, nice_ceil(float(top)) if top > 0 else 1.0)
    ax.set_xticks(dataset.layers if len(dataset.layers) <= 16 else ax.get_xticks())
    ax.grid(alpha=0.3)
    ax.legend(title=f"{round(ci * 100)}% bootstrap interval", fontsize="small")
    model = dataset.provenance.get("model_name") or "model"
    default = f"{model_short_name(model)}: {dataset.n_prompts} prompts"
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


def model_short_name(name: Any) -> str:
    """A model's name as a title shows it: a hub id or a folder's last part (``"gpt2"`` of
    ``"openai-community/gpt2"`` or ``"/models/gpt2/"``)."""
    text = str(name).rstrip("/\\")
    return text.replace("\\", "/").rsplit("/", 1)[-1] or text


def plot_contributions(
    dataset: LensDataset,
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    ax: Axes | Sequence[Axes] | None = None,
    title: str | None = None,
) -> Figure | SubFigure:
    """The direct logit attribution over the data set: each component's mean contribution to
    the answer's logit (or logit(answer) − logit(foil)) at the prompts' last position, signed,
    in model order, with its bootstrap interval as a whisker.

    Without heads: one bar per component (``embed``, ``L0.attn``, ``L0.mlp``, ...), coloured
    by kind. With heads (``lens_dataset(..., heads=True)``): a layer × head grid of the heads'
    means (the widgets' diverging scale, white at 0, symmetric about it; each cell's mean
    written in it up to :data:`ANNOTATE_CELLS` cells; no whiskers there: the intervals are in
    :meth:`~murano_widgets.LensDataset.contribution_summary`) above bars for the other
    components (``embed``, each layer's ``attn_bias`` and ``mlp``; an ``attn_bias`` that is 0
    for every prompt, a model without that bias, is left out). The bias row of the summary (the
    rest of the logit no component wrote) is not drawn.

    Everything is vector (nothing rasterized but the grid's cells, drawn as an image).

    Args:
        dataset: A data set made with ``decompose=True``.
        ci, n_boot, seed: The intervals (see :meth:`LensDataset.contribution_summary`).
        ax: Axes to draw into (without heads), or two (with heads: the grid's, the bars');
            a new figure if ``None``.
        title: The title; the default names the model, what the contributions are to
            ("answer − foil" with foils) and the number of prompts.

    Returns:
        The figure.

    Raises:
        ValueError: For a data set without contributions.
        TypeError: For ``ax`` that is not Axes (or a pair of Axes, with heads).
    """
    import matplotlib.pyplot as plt

    table = dataset.contribution_summary(ci=ci, n_boot=n_boot, seed=seed)
    rows = table[table["kind"] != "bias"]
    heads = rows[rows["kind"] == "head"]
    target = "answer − foil" if dataset.foils is not None else "answer logit"
    n_counted = int(table["n_prompts"].iloc[0])
    model = dataset.provenance.get("model_name") or "model"
    default = f"{model_short_name(model)}: direct logit attribution, {target} ({n_counted} prompts)"
    ylabel = (
        "direct contribution to logit(answer) − logit(foil)"
        if dataset.foils is not None
        else "direct contribution to logit(answer)"
    )
    fig: Figure | SubFigure  # drawn into given axes, the figure they sit in (maybe a subfigure)
    if heads.empty:
        given = check_axes(ax)
        if given is None:
            width = min(16.0, max(6.4, 0.32 * len(rows) + 1.5))
            fig, bar_ax = plt.subplots(figsize=(width, 4.0), layout="constrained")
        else:
            bar_ax = given
            fig = bar_ax.figure
        _contribution_bars(bar_ax, rows, ci, ylabel)
        bar_ax.set_title(title if title is not None else default)
        return fig

    grid_ax, bar_ax = _two_axes(ax)
    others = rows[rows["kind"] != "head"]
    no_bias = (
        (others["kind"] == "attn_bias")
        & (others["contribution_mean"] == 0)
        & (others["contribution_ci_low"] == 0)
        & (others["contribution_ci_high"] == 0)
    )
    others = others[~no_bias]
    if grid_ax is None:
        n_layers = int(heads["layer"].max()) + 1
        width = min(16.0, max(6.4, 0.32 * len(others) + 1.5))
        fig, (grid_ax, bar_ax) = plt.subplots(
            2,
            1,
            figsize=(width, 3.0 + 0.3 * n_layers + 3.0),
            layout="constrained",
            height_ratios=[max(3.0, 0.3 * n_layers), 3.0],
        )
    else:
        fig = grid_ax.figure
    _head_grid(fig, grid_ax, heads)
    _contribution_bars(bar_ax, others, ci, ylabel)
    grid_ax.set_title(title if title is not None else default)
    return fig


def _two_axes(ax: Any) -> tuple[Any, Any]:
    """The grid's and the bars' axes from ``ax`` (``None``: both ``None``, a new figure)."""
    if ax is None:
        return None, None
    from matplotlib.axes import Axes

    if isinstance(ax, np.ndarray):  # what plt.subplots(2, 1) gives
        ax = list(ax.reshape(-1))
    if (
        isinstance(ax, Axes)
        or not isinstance(ax, Sequence)
        or len(ax) != 2
        or not all(isinstance(one, Axes) for one in ax)
    ):
        raise TypeError(
            "ax must be two matplotlib Axes for a data set with heads (the head grid's and the "
            f"bars', e.g. fig, ax = plt.subplots(2, 1)) or None; got {type(ax).__name__}"
        )
    return ax[0], ax[1]


def _contribution_bars(ax: Axes, rows: pd.DataFrame, ci: float, ylabel: str) -> None:
    """One bar per row (its mean, signed) with its interval as a whisker, in the rows' order."""
    from matplotlib.patches import Patch

    x = np.arange(len(rows))
    mean = rows["contribution_mean"].to_numpy(dtype=np.float64)
    low = rows["contribution_ci_low"].to_numpy(dtype=np.float64)
    high = rows["contribution_ci_high"].to_numpy(dtype=np.float64)
    kinds = rows["kind"].tolist()
    colours = [KIND_COLOURS.get(kind, _OTHER_KIND_COLOUR) for kind in kinds]
    ax.bar(x, mean, color=colours, width=0.75, zorder=2)
    ax.errorbar(
        x,
        mean,
        yerr=np.stack([mean - low, high - mean]),
        fmt="none",
        ecolor="#333333",
        elinewidth=1.0,
        capsize=2.5,
        zorder=3,
    )
    ax.axhline(0.0, color="#333333", linewidth=0.8, zorder=1)
    labels = rows["component"].tolist()
    ax.set_xticks(
        x,
        labels,
        rotation=90 if len(labels) > 12 else 45,
        ha="center" if len(labels) > 12 else "right",
    )
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("component (model order)")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    present = list(dict.fromkeys(kinds))
    handles = [
        Patch(color=KIND_COLOURS.get(kind, _OTHER_KIND_COLOUR), label=kind) for kind in present
    ]
    ax.legend(
        handles=handles,
        title=f"mean, {round(ci * 100)}% bootstrap interval",
        fontsize="small",
        title_fontsize="small",
    )


def _head_grid(fig: Figure | SubFigure, ax: Axes, heads: pd.DataFrame) -> None:
    """The heads' means as a layer × head grid on the diverging scale, centred at 0."""
    from matplotlib.colors import LinearSegmentedColormap, Normalize

    layers = heads["layer"].to_numpy(dtype=np.int64)
    index = heads["head"].to_numpy(dtype=np.int64)
    grid = np.full((int(layers.max()) + 1, int(index.max()) + 1), np.nan)
    grid[layers, index] = heads["contribution_mean"].to_numpy(dtype=np.float64)
    finite = np.abs(grid[np.isfinite(grid)])
    limit = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    colour_map = LinearSegmentedColormap.from_list(
        "murano_diverging", DIVERGING, N=257
    ).with_extremes(bad="#d0d0d0")
    norm = Normalize(vmin=-limit, vmax=limit)
    image = ax.imshow(
        np.ma.masked_invalid(grid),
        cmap=colour_map,
        norm=norm,
        aspect="auto",
        origin="lower",
        interpolation="nearest",
    )
    colour_bar = fig.colorbar(image, ax=ax, pad=0.01)
    colour_bar.set_label("mean direct contribution of the head")
    n_layers, n_heads = grid.shape
    if grid.size <= ANNOTATE_CELLS:
        for i in range(n_layers):
            for j in range(n_heads):
                if not np.isfinite(grid[i, j]):
                    continue
                rgba = colour_map(norm(grid[i, j]))
                light = 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2] > 0.45
                ax.text(
                    j,
                    i,
                    f"{grid[i, j]:.2g}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if light else "white",
                )
    ax.set_yticks(range(n_layers), [str(layer) for layer in range(n_layers)])
    ax.set_xticks(range(n_heads), [str(head) for head in range(n_heads)])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
