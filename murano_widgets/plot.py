"""``plot_logit_lens``: the standard static logit-lens heatmap, with matplotlib."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets._adapters import as_lens_result
from murano_widgets._checks import check_axes, check_bool, check_choice, check_index, check_int
from murano_widgets.chat import check_hide_template
from murano_widgets.lenses import title_of
from murano_widgets.metrics import METRICS, metric_domain
from murano_widgets.tokens import display_token

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from murano_widgets.results.result import LogitLensResult

__all__ = ["plot_lenses", "plot_logit_lens"]

# The widget's generation marks (the light theme's --murano-generated and --murano-generated-bg
# in js/src/theme.css; tests/test_plot.py checks the two agree): a rule where the generated
# tokens start, and a tint under their input tokens.
GENERATED_COLOUR = "#d55e00"
GENERATED_TINT = (213 / 255, 94 / 255, 0.0, 0.13)
# The role band: its height and the gap between it and the heatmap, in points (fixed sizes, so
# the band looks the same however many layers the figure has).
_BAND_POINTS = 5.0
_BAND_GAP_POINTS = 1.5


def plot_logit_lens(
    result: Any,
    prompt: int = 0,
    layers: Sequence[int] | None = None,
    metric: str = "prob",
    ax: Axes | None = None,
    *,
    max_token_chars: int = 8,
    marks: bool = True,
    hide_template: bool = False,
    target: str | None = None,
    group: str | None = None,
) -> Figure:
    """Draws one prompt's logit lens: rows are layers (highest on top), columns positions.

    Each cell is coloured by ``metric`` and labelled with the layer's top-1 token; padding is
    left out; token labels show spaces and newlines as visible marks. Works headless (Agg).

    Generated text and chats are marked as the widget marks them: a rule where the generated
    tokens start (``generate=N``), whose input-token labels are italic on a light tint; and
    (``chat=...``) a band under the heatmap in each token's role colour, with a legend of the
    roles present.

    Args:
        result: A :class:`LogitLensResult` (or a ``murano`` result).
        prompt: Which prompt of the batch.
        layers: Model layers to show (a subset of the result's); ``None`` for all.
        metric: One of :data:`~murano_widgets.metrics.METRICS`: ``"prob"``, ``"entropy"``,
            ``"final_prob"``, ``"final_rank"``, ``"kl"``, ``"answer"`` or ``"target"`` (a
            tracked token's probability: the token ``target``).
        ax: Axes to draw into; a new figure is made if ``None``.
        max_token_chars: Longer token labels are cut with an ellipsis.
        marks: Draw the generation and chat-role marks (when the result has them); ``False``
            for the plain heatmap.
        hide_template: Leave out the chat template's own tokens, as the widget's "hide
            chat-template tokens" box does (only for chats; a prompt of template tokens only
            keeps them).
        target: With ``metric="target"``: the tracked token shown, one of ``result.targets``
            (default the first); the colour bar names it.
        group: With ``metric="group"``: the token group shown, one of
            ``result.group_names`` (default the first); the colour bar names it.

    Returns:
        The figure.

    Raises:
        ValueError: For a prompt, layer or metric out of range, ``hide_template=True`` on
            a result without chat-template tokens, or a ``target`` that is not tracked (or
            given for a metric of no target).
        TypeError: For a ``marks`` or ``hide_template`` that is not ``True`` or ``False``.
    """
    marks = check_bool("marks", marks)
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm, Normalize

    result = as_lens_result(result).validate()
    hide_template = check_hide_template(hide_template, result.token_roles, ValueError)
    check_choice("metric", metric, METRICS)
    check_axes(ax)
    max_token_chars = check_int("max_token_chars", max_token_chars, 1, None, None)
    prompt = check_index("prompt", prompt, result.n_inputs, "prompts")
    rows = _rows(result.layers, layers)
    spec = METRICS[metric]
    target = _check_target(spec, target, result.targets)
    group = _check_group(spec, group, result.group_names)
    values = getattr(result, spec.field)
    if values is None:
        raise ValueError(
            f"metric {metric!r} needs result.{spec.field}, which this result lacks"
            + (" (it is measured against the model's final layer)" if spec.final_based else "")
        )
    if target is not None:
        values = values[..., list(result.targets).index(target)]
    if group is not None:
        values = values[..., list(result.group_names or []).index(group)]
    columns = _shown_columns(result, prompt, hide_template)
    positions = [result.positions(prompt).tolist()[k] for k in columns]
    grid = values[rows][:, prompt, positions].double().numpy()
    if spec.unit == "rank":
        grid = np.where(grid < 0, np.nan, grid)  # -1: no value
    words = [[result.predicted_words[r][prompt][s] for s in positions] for r in rows]
    inputs = [result.input_words[prompt][s] for s in positions]
    max_entropy = float(np.log2(result.vocab_size)) if result.vocab_size else None
    low, high = metric_domain(
        spec, values[:, result.attention_mask.bool()].double().numpy(), max_entropy
    )

    n_rows, n_cols = grid.shape
    if ax is None:
        fig, ax = plt.subplots(figsize=_figure_size(n_rows, n_cols), layout="constrained")
    else:
        fig = ax.figure
    if spec.log:
        shown = np.ma.masked_invalid(grid + 1.0)  # rank 0 -> 1 on a log scale
        norm = LogNorm(vmin=low + 1.0, vmax=high + 1.0)
    else:
        shown = np.ma.masked_invalid(grid)
        norm = Normalize(vmin=low, vmax=high)
    # Non-finite and missing cells are grey: missing, not a colour.
    colour_map = plt.get_cmap(spec.scale + ("_r" if spec.reverse else "")).with_extremes(
        bad="#d0d0d0"
    )
    image = ax.imshow(
        shown, cmap=colour_map, norm=norm, aspect="auto", origin="lower", interpolation="nearest"
    )
    colour_bar = fig.colorbar(image, ax=ax, pad=0.01)
    colour_bar.set_label(spec.label_for(target if group is None else group))

    for i in range(n_rows):
        for j in range(n_cols):
            text = _short(display_token(words[i][j]), max_token_chars)
            rgba = (
                colour_map(norm(shown[i, j])) if not np.ma.is_masked(shown[i, j]) else (1, 1, 1, 1)
            )
            light = 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2] > 0.45
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=8,
                color="black" if light else "white",
            )

    ax.set_yticks(range(n_rows), [_row_label(result, r) for r in rows])
    ax.set_xticks(
        range(n_cols),
        [_short(display_token(w), max_token_chars) for w in inputs],
        rotation=45,
        ha="right",
    )
    legend = False
    if marks:
        _mark_generated(ax, result, prompt, columns)
        legend = _mark_roles(ax, result, prompt, columns)
    ax.set_ylabel("layer")
    ax.set_xlabel("input token (the cell shows the top-1 prediction for the next token)")
    title = result.prompts[prompt] if result.prompts else "".join(inputs)
    kind = title_of(result)
    ax.set_title(
        f"{kind}: {_short(display_token(title, spaces=False), 80)}",
        fontsize=10,
        loc="left",
        pad=20 if legend else None,  # None: the default; 20 leaves the legend its row
    )
    return fig


def _check_group(spec: Any, group: Any, groups: list[str] | None) -> str | None:
    """The token group a per-group metric shows (default the first); ``None`` for the other
    metrics, which take none."""
    if not spec.per_group:
        if group is not None:
            raise ValueError(
                f"group is for the metric of each token group (metric='group'); metric "
                f"{spec.name!r} shows none; got group={group!r}"
            )
        return None
    if not groups:
        raise ValueError("metric 'group' needs token groups: run with groups={...}")
    if group is None:
        return groups[0]
    if not isinstance(group, str) or group not in groups:
        raise ValueError(
            f"group must be one of the result's group_names {list(groups)}; got {group!r}"
        )
    return group


def _check_target(spec: Any, target: Any, targets: list[str] | None) -> str | None:
    """The tracked token a per-target metric shows (default the first); ``None`` for the other
    metrics, which take none."""
    if not spec.per_target:
        if target is not None:
            raise ValueError(
                f"target is for a metric of each tracked token (metric='target'); metric "
                f"{spec.name!r} shows none; got target={target!r}"
            )
        return None
    if not targets:
        raise ValueError(
            f"metric {spec.name!r} shows a tracked token's probability, and this result tracks "
            "none: run with targets=[...]"
        )
    if target is None:
        return targets[0]
    if not isinstance(target, str) or target not in targets:
        raise ValueError(
            f"target must be one of the result's targets {list(targets)}; got {target!r}"
        )
    return target


def plot_lenses(
    results: Any,
    prompt: int = 0,
    layers: Sequence[int] | None = None,
    metric: str = "prob",
    **options: Any,
) -> Figure:
    """One prompt's heatmap under every lens of a :class:`~murano_widgets.LensResults`, one
    above the other in one figure (the same prompt, layers and metric; each with its colour bar
    and its lens in the title).

    Args:
        results: The lenses' results.
        prompt, layers, metric: As for :func:`plot_logit_lens`.
        **options: Its keyword-only options (``max_token_chars``, ``marks``, ``hide_template``).

    Raises:
        ValueError, TypeError: As :func:`plot_logit_lens`, before anything is drawn.
    """
    import matplotlib.pyplot as plt

    first = results.first.validate()
    prompt = check_index("prompt", prompt, first.n_inputs, "prompts")
    hide = check_hide_template(options.get("hide_template", False), first.token_roles, ValueError)
    n_cols = len(_shown_columns(first, prompt, hide))
    width, height = _figure_size(len(_rows(first.layers, layers)), n_cols)
    fig, axes = plt.subplots(
        len(results), 1, figsize=(width, height * len(results)), layout="constrained", squeeze=False
    )
    try:
        for ax, result in zip(axes[:, 0], results.values(), strict=True):
            plot_logit_lens(result, prompt=prompt, layers=layers, metric=metric, ax=ax, **options)
    except Exception:
        plt.close(fig)
        raise
    return fig


def _figure_size(n_rows: int, n_cols: int) -> tuple[float, float]:
    """A heatmap's figure size in inches: room for each cell's label, at most 40 a side."""
    return min(2.0 + 0.75 * n_cols, 40.0), min(1.5 + 0.38 * n_rows, 40.0)


def _shown_columns(result: Any, prompt: int, hide_template: bool) -> list[int]:
    """The prompt's real tokens drawn as columns (indices among them), in order."""
    from murano_widgets.chat import ROLES

    n = len(result.positions(prompt))
    if not hide_template:
        return list(range(n))
    kept = [k for k, role in enumerate(result.token_roles[prompt][:n]) if role != ROLES[0]]
    return kept or list(range(n))  # a prompt of template tokens only: nothing to hide it from


def _mark_generated(ax: Axes, result: Any, prompt: int, columns: list[int]) -> None:
    """The rule before the first generated column; italic, tinted labels from there on."""
    if result.generation_starts is None:
        return
    # The first shown column at or after the first generated token (columns index the
    # prompt's real tokens; hidden template tokens are not among them).
    start = sum(1 for k in columns if k < result.generation_starts[prompt])
    n_cols = len(columns)
    for label in ax.get_xticklabels()[start:]:
        label.set_fontstyle("italic")
        label.set_bbox({"facecolor": GENERATED_TINT, "edgecolor": "none", "pad": 1.5})
    # As in the widget: no rule when nothing, or everything, was generated (no boundary).
    if 0 < start < n_cols:
        ax.axvline(
            start - 0.5, color=GENERATED_COLOUR, linewidth=2, zorder=3, gid="generation-boundary"
        )


def _mark_roles(ax: Axes, result: Any, prompt: int, columns: list[int]) -> bool:
    """A band under the heatmap, one segment per token in its role's colour, and a legend.

    Returns:
        Whether a legend was drawn above the heatmap (the title then makes room for it).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.transforms import Affine2D, ScaledTranslation, blended_transform_factory

    from murano_widgets.chat import ROLES, role_colours, role_names

    if result.token_roles is None:
        return False
    roles = [result.token_roles[prompt][k] for k in columns]
    # Colours are picked over the whole result's roles, so an unusual role keeps its colour
    # from prompt to prompt, as in the widget.
    colours = role_colours(role_names(result.token_roles))
    fig = ax.figure
    # x in data units (columns); y in points from the axes' bottom, so the band keeps its size
    # whatever the figure's height or the dpi it is saved at.
    points_from_bottom = (
        Affine2D().scale(1 / 72) + fig.dpi_scale_trans + ScaledTranslation(0, 0, ax.transAxes)
    )
    band_transform = blended_transform_factory(ax.transData, points_from_bottom)
    tick = plt.rcParams["xtick.major.size"]
    top = -(tick + _BAND_GAP_POINTS)
    for column, role in enumerate(roles):
        ax.add_artist(
            Rectangle(
                (column - 0.45, top - _BAND_POINTS),
                0.9,
                _BAND_POINTS,
                transform=band_transform,
                facecolor=colours[role],
                edgecolor="none",
                clip_on=False,
                gid="role-band",
            )
        )
    # The tick labels go below the band rather than over it.
    ax.tick_params(axis="x", pad=plt.rcParams["xtick.major.pad"] + _BAND_GAP_POINTS + _BAND_POINTS)
    shown = set(roles)
    present = [name for name in colours if name in shown]
    handles = [
        Patch(facecolor=colours[name], label="chat template" if name == ROLES[0] else name)
        for name in present
    ]
    # Above the heatmap, under the title (which moves up to make room): never over a cell, and
    # clear of the colour bar on the right.
    ax.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncols=len(handles),
        frameon=False,
        fontsize=8,
        handlelength=1.2,
        handleheight=0.6,
        columnspacing=1.2,
        borderaxespad=0.2,
        borderpad=0.0,
    )
    return True


def _rows(available: list[int], layers: Sequence[int] | None) -> list[int]:
    if layers is None:
        return list(range(len(available)))
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Iterable):
        raise ValueError(
            f"layers must be a list of the result's layers or None; got "
            f"{type(layers).__name__} {layers!r}"
        )
    rows = []
    for layer in layers:
        if isinstance(layer, (bool, np.bool_)) or not isinstance(layer, (int, np.integer)):
            raise ValueError(
                f"layers must hold ints (layers of the result: {available}); got "
                f"{type(layer).__name__} {layer!r}"
            )
        if layer not in available:
            raise ValueError(f"layers holds {layer!r}, which the result lacks (it has {available})")
        # Every row of the layer: with sites=("resid_mid", ...) a layer has two.
        rows.extend(i for i, shown in enumerate(available) if shown == layer and i not in rows)
    return sorted(rows)


def _row_label(result: LogitLensResult, row: int) -> str:
    """A row's tick label, as the widget's axis names it: the layer, and "attn" after it for a
    row read after the layer's attention (``sites=("resid_mid", ...)``)."""
    node = result.addresses[row]
    return f"{node.layer} attn" if node.module == "resid_mid" else str(node.layer)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
