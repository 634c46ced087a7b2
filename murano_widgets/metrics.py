"""The registry of what every view measures: every metric and every payload section, once.

One :class:`Metric` type for every view, in one dict per view (:data:`VIEWS`): the heatmap's
(:data:`METRICS`: the widget, the static plot, the HTML export, the CLI, the notebooks), the
diff's (:data:`DIFF_METRICS`) and a data set's (:data:`DATASET_METRICS`: its chart, its
readout and ``plot_dataset``). Each view's payload sends its entries to the front end
(``meta["metrics"]``), which reads names, labels, units and scales from there; nothing else
lists them.

To add a heatmap metric: compute its field in :mod:`murano_widgets.step.reductions` (per row of
a chunk), add one :class:`Metric` with ``reduced=True`` below, and declare the field on
:class:`~murano_widgets.LogitLensResult` with its layout (``cell()``). Its payload
:class:`Section` is made from the metric (:data:`SECTIONS`); the step's padding, the result's
shape checks and the payload read the field list from here (:data:`REDUCED_FIELDS`).

Ranks are counted from 0 everywhere a person reads them: **rank 0 is the top-1 token**.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from murano_widgets.tokens import display_token

__all__ = [
    "ATTRIBUTION_SECTIONS",
    "DATASET_CHART",
    "DATASET_METRICS",
    "DIFF_CHANGES",
    "DIFF_METRICS",
    "METRICS",
    "RANK_CONVENTION",
    "REDUCED_FIELDS",
    "RESULT_FIELDS",
    "SECTIONS",
    "TARGET_METRIC",
    "VIEWS",
    "Metric",
    "Section",
    "change_metric",
    "diff_changes",
    "held_metrics",
    "metric_domain",
    "missing_value",
]

RANK_CONVENTION = "rank 0 is the top-1 token"


@dataclass(frozen=True)
class Metric:
    """One quantity a view shows: a way of colouring the heatmap or the diff, or a data set's
    curve or readout value.

    Attributes:
        name: What users pass (``metric="kl"``), unique within its view.
        field: Where its values are: for the heatmap, the :class:`LogitLensResult` field it
            reads, which is also its payload section; for the diff, its payload section; for a
            data set, the column of :meth:`LensDataset.summary` (and of the chart's summary).
        label: The menu, legend, axis and readout label, with the unit.
        unit: ``"probability"``, ``"bits"`` or ``"rank"`` (0 = top-1); the diff's ``"delta"``
            (a change in probability) and ``"boolean"``; a data set's ``"share"`` (of prompts).
        scale: The heatmap's colour map (``"viridis"``, ``"cividis"`` or ``"magma"``:
            colour-blind safe); the diff's ``"diverging"``, ``"sequential"`` or ``"binary"``;
            ``""`` for a data set's.
        reverse: Whether the map is flipped, so that "confident / close to the final
            prediction" is always the bright end.
        log: Whether values are placed on a logarithmic scale (``log1p``).
        description: How a person reads it, in one sentence.
        final_based: Whether it is measured against the model's own final distribution (so it
            needs the model's last layer).
        target_label: For a metric of each tracked token (its field's section is
            ``"cell_target"``, :attr:`per_target`): the label naming the token shown, with
            ``{target}`` where the token goes (``label`` names none, for the menu).
        view: The view it belongs to: ``"lens"`` (the heatmap), ``"diff"`` or ``"dataset"``.
        short: A short name, for a legend or a column head (``"KL"``).
        reduced: A heatmap field that :func:`murano_widgets.step.reductions.reduce_logits`
            computes for every row: its payload section is made from this entry.
        interval: A data set's: the summary columns of the interval around ``field``
            (``(low, high)``), or ``None`` for a value shown without one. The chart draws
            the metrics that have one.
        needs: What a run must be given for the metric to exist (``"foils"``), or ``""``: a
            view lists such a metric only when its result holds the field, so a result
            without it sends what it sent before the metric was added.
    """

    name: str
    field: str
    label: str
    unit: str
    # The heatmap's own (a diff's or data set's entry leaves what it has no use for).
    scale: str = ""
    reverse: bool = False
    log: bool = False
    description: str = ""
    final_based: bool = False
    target_label: str | None = None
    view: str = "lens"
    short: str | None = None
    reduced: bool = False
    interval: tuple[str, str] | None = None
    needs: str = ""

    @property
    def per_target(self) -> bool:
        """Whether it has a value per tracked token (``[L, T, n_targets]``): one of them, the
        widget's ``target``, is shown at a time."""
        return self.view == "lens" and SECTIONS[self.field].shape == "cell_target"

    @property
    def per_group(self) -> bool:
        """Whether it has a value per token group (``[L, T, n_groups]``): one of them, the
        widget's ``group``, is shown at a time."""
        return self.view == "lens" and SECTIONS[self.field].shape == "cell_group"

    def label_for(self, target: str | None = None) -> str:
        """The label, naming ``target`` (as :func:`~murano_widgets.tokens.display_token` shows
        it) for a per-target metric; a per-group metric's names its group as given (a name,
        not a token)."""
        if self.target_label is None or target is None:
            return self.label
        return self.target_label.replace(
            "{target}", target if self.per_group else display_token(target)
        )

    def as_json(self) -> dict[str, Any]:
        entry = {**asdict(self), "per_target": self.per_target}
        if not self.needs:  # said only where it holds (a payload without it is as it was)
            del entry["needs"]
        if self.per_group:  # likewise
            entry["per_group"] = True
        return entry


METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric(
            name="prob",
            field="max_probs",
            label="Top-1 probability",
            unit="probability",
            scale="viridis",
            description=(
                "How sure the layer is of its own best guess: bright = one token takes most of "
                "the probability."
            ),
        ),
        Metric(
            name="entropy",
            field="entropy",
            label="Entropy (bits)",
            unit="bits",
            scale="cividis",
            reverse=True,
            description=(
                "How spread out the layer's distribution is: 0 bits is certain; every extra bit "
                "doubles the number of equally likely tokens."
            ),
            short="entropy",
            reduced=True,
        ),
        Metric(
            name="final_prob",
            field="final_token_probs",
            label="Probability of the final prediction",
            unit="probability",
            scale="viridis",
            description=(
                "How much probability the layer already gives to the token the model finally "
                "predicts at that position."
            ),
            final_based=True,
            short="final prediction's probability",
            reduced=True,
        ),
        Metric(
            name="final_rank",
            field="final_token_ranks",
            label="Rank of the final prediction (0 = top-1)",
            unit="rank",
            scale="viridis",
            reverse=True,
            log=True,
            description=(
                "Where the model's final prediction stands in the layer's ranking: rank 0 means "
                "the layer already predicts it."
            ),
            final_based=True,
            short="final prediction's rank",
            reduced=True,
        ),
        Metric(
            name="kl",
            field="kl_to_final",
            label="KL(final ‖ layer) in bits",
            unit="bits",
            scale="magma",
            reverse=True,
            description=(
                "How far the layer's distribution is from the model's final one: 0 bits means the "
                "same distribution."
            ),
            final_based=True,
            short="KL to final",
            reduced=True,
        ),
        Metric(
            name="answer",
            field="answer_token_probs",
            label="Probability of the answer's first token",
            unit="probability",
            scale="viridis",
            description=(
                "How much probability the layer gives to the prompt's answer (its first token; at "
                "the last position the trajectory shows the whole answer, teacher-forced)."
            ),
        ),
        Metric(
            name="target",
            field="target_probs",
            label="Probability of a tracked token",
            unit="probability",
            scale="viridis",
            description=(
                "How much probability the layer gives to a tracked token (its first token) as the "
                "next token: the token chosen beside this menu (targets=[...], or w.track(text))."
            ),
            target_label="Probability of “{target}”",
        ),
        Metric(
            name="logit_diff",
            field="logit_diff",
            label="Logit difference, answer − foil",
            unit="logit",
            scale="viridis",
            description=(
                "How much the layer's lens prefers the answer's first token to the foil's: its "
                "logit minus the foil's (0: no preference; the same in every softmax)."
            ),
            short="logit diff",
            reduced=True,
            needs="foils",
        ),
        Metric(
            name="group",
            field="group_probs",
            label="Probability of a token group",
            unit="probability",
            scale="viridis",
            description=(
                "How much probability the layer gives to a group of tokens (a word in all its "
                "prefixes and spellings: groups={...}): the probability that the next token is "
                "one of them, the group chosen beside this menu."
            ),
            target_label="Probability of group “{target}”",
            needs="groups",
        ),
    )
}


def diff_changes(heatmap: dict[str, Metric]) -> dict[str, Metric]:
    """The heatmap metrics the diff shows as a change ``b - a``, by the diff metric's name
    (``"delta_" + field``, also its payload section): every field the step's reductions compute
    (``reduced=True``) and the top-1 probability."""
    return {
        f"delta_{metric.field}": metric
        for metric in heatmap.values()
        if metric.reduced or metric.field == "max_probs"
    }


def change_metric(name: str, metric: Metric) -> Metric:
    """The diff's entry for the change ``b - a`` in the heatmap's ``metric``: in its unit, on the
    diverging scale, a rank's on a symmetric log scale (``log``: sign · log1p), since one cell's
    rank can move by thousands where most move by a few."""
    label = metric.label
    lowered = label[:1].lower() + label[1:] if label[1:2].islower() else label
    side = " (each side against its own final prediction)" if metric.final_based else ""
    return Metric(
        name=name,
        field=name,
        label=f"Change in {lowered} (b − a)",
        unit=metric.unit,
        scale="diverging",
        log=metric.unit == "rank",
        description=(
            f"b's value minus a's{side}, on aligned cells: orange where b's is higher, blue "
            f"where it is lower; neutral: no change. {metric.description}"
        ).strip(),
        final_based=metric.final_based,
        view="diff",
        short=f"Δ {metric.short or metric.name}",
        needs=metric.needs,
    )


#: The heatmap's per-cell metrics the diff shows as a change (:func:`diff_changes`): a reduced
#: metric added to :data:`METRICS` reaches the diff's comparison, payload, menu, legend and
#: tooltip from here, with no diff code.
DIFF_CHANGES: dict[str, Metric] = diff_changes(METRICS)

#: The diff of two lenses (:func:`murano_widgets.show_lens_diff`): its colourings.
DIFF_METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric(
            name="delta_prob",
            field="delta_prob",
            label="Change in the chosen token's probability (b − a)",
            unit="delta",
            scale="diverging",
            description="Orange: b gives the chosen token more probability than a; blue: less; "
            "neutral (nearest the page's background): no change.",
            view="diff",
            short="Δ p",
        ),
        Metric(
            name="kl",
            field="kl_a_to_b",
            label="KL(a ‖ b) in bits",
            unit="bits",
            scale="sequential",
            description="How far b's distribution is from a's (0: the same).",
            view="diff",
            short="KL",
        ),
        Metric(
            name="top1_differs",
            field="top1_differs",
            label="Top-1 token differs",
            unit="boolean",
            scale="binary",
            description="Orange where the two cells' top-1 tokens differ.",
            view="diff",
            short="top-1",
        ),
        # The change in each of the heatmap's per-cell metrics (DIFF_CHANGES), in its unit.
        *(change_metric(name, metric) for name, metric in DIFF_CHANGES.items()),
    )
}

#: A data set's values per layer, over its prompts (:meth:`LensDataset.summary`'s columns):
#: the chart draws those with an interval; the readout shows them all. The answer's are the data
#: set's own; every reduced heatmap metric follows, derived from :data:`METRICS`.
DATASET_METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric(
            name="answer_prob",
            field="answer_prob_mean",
            label="Probability of the answer (mean)",
            unit="probability",
            description="The answer's probability, teacher-forced, averaged over the prompts "
            "that have one.",
            view="dataset",
            short="mean answer probability",
            interval=("answer_prob_ci_low", "answer_prob_ci_high"),
        ),
        Metric(
            name="top1_accuracy",
            field="top1_accuracy",
            label="Answer is the top-1 token (share of prompts)",
            unit="share",
            description="The share of prompts whose answer's first token is the layer's top-1 "
            "token.",
            view="dataset",
            short="top-1 accuracy",
            interval=("top1_accuracy_ci_low", "top1_accuracy_ci_high"),
        ),
        Metric(
            name="committed",
            field="committed",
            label="Answer committed: top-1 from this layer on (share of prompts)",
            unit="share",
            description="The share of prompts whose answer is the top-1 token at this layer "
            "and every later one.",
            view="dataset",
            short="committed from here on",
            interval=("committed_ci_low", "committed_ci_high"),
        ),
        Metric(
            name="answer_rank",
            field="answer_rank_median",
            label="Rank of the answer (median; 0 = top-1)",
            unit="rank",
            description="The median rank of the answer's first token.",
            view="dataset",
            short="median rank (0 = top-1)",
        ),
        # Every reduced heatmap metric, which a data set keeps at each prompt's last position
        # (murano_widgets.dataset.table): its mean over the prompts, with an interval.
        *(
            Metric(
                name=metric.name,
                field=f"{metric.field}_mean",
                label=f"{metric.label} (mean)",
                unit=metric.unit,
                description=metric.description,
                final_based=metric.final_based,
                view="dataset",
                short=f"{metric.short or metric.name} (mean)",
                interval=(f"{metric.field}_ci_low", f"{metric.field}_ci_high"),
                needs=metric.needs,
            )
            for metric in METRICS.values()
            if metric.reduced
        ),
    )
}

#: The data set's metrics its chart (and ``plot_dataset``) can draw: those with an interval.
DATASET_CHART = tuple(name for name, metric in DATASET_METRICS.items() if metric.interval)


def held_metrics(columns: Any) -> list[Metric]:
    """A data set's metrics whose summary ``columns`` are there: all of
    :data:`DATASET_METRICS`, less the heatmap metrics that a data set saved by an older version
    did not keep."""
    have = set(columns)
    return [
        metric
        for metric in DATASET_METRICS.values()
        if {metric.field, *(metric.interval or ())} <= have
    ]


#: Every view's metrics: what a view's payload sends as ``meta["metrics"]``.
VIEWS: dict[str, dict[str, Metric]] = {
    "lens": METRICS,
    "diff": DIFF_METRICS,
    "dataset": DATASET_METRICS,
}

#: The metric a tracked token is shown by (``w.track(text)``, the front end's ``track`` with
#: ``show``): its probability at every cell, one token at a time (the widget's ``target``).
TARGET_METRIC = "target"


@dataclass(frozen=True)
class Section:
    """One binary array of the widget's payload.

    Attributes:
        name: The section's name, the result field it encodes where there is one.
        shape: ``"cell"`` (``[L, T]``), ``"position"`` (``[T]``), ``"topk"`` (``[L, T, k-1]``,
            ranks 2..k), ``"prompt_set"`` (``[L, n_inputs, S]``: per prompt and answer set),
            ``"last"`` (``[L, n_inputs]``: at each prompt's last position), ``"cell_target"``
            (``[L, T, n_targets]``) or ``"cell_group"`` (``[L, T, n_groups]``); the
            attribution's (:data:`ATTRIBUTION_SECTIONS`) add a last axis of components, ``C``: ``"cell_component"`` (``[L, T, C]``),
            ``"last_component"`` (``[L, n_inputs, C]``) and ``"cell_target_component"``
            (``[L, T, n_targets, C]``).
        kind: How values are stored: ``"token"`` (an index into the string table),
            ``"probability"`` (uint16, steps of 1/65535), ``"bits"`` (uint16 scaled to
            the section's maximum), ``"rank"`` (uint16, 65535 = "65535 or worse"), ``"mask"``
            (uint8, 1 = marked: no value, or as the section says), ``"code"`` (uint8, an
            index into a list of names in the metadata, ``meta[name's list]``) or ``"logit"``
            (float32 as computed, NaN kept: a logit or a part of one).
        base: Sent with the first view; the others when the front end first asks for them.
        reduced: A per-cell field that :func:`murano_widgets.step.reductions.reduce_logits`
            computes for every row: the step pads it into the result, the result checks its
            shape and the payload sends it, all from this flag (a new metric's field sets it).
    """

    name: str
    shape: str
    kind: str
    base: bool
    reduced: bool = False


SECTIONS: dict[str, Section] = {
    section.name: section
    for section in (
        Section("input_ids", "position", "token", True),
        Section("final_tokens", "position", "token", True),
        Section("predicted_tokens", "cell", "token", True),
        Section("max_probs", "cell", "probability", True),
        # 1 where a layer's distribution was not finite: the whole cell has no value.
        Section("missing", "cell", "mask", True),
        # 1 where the model's own output was not finite: final-based metrics have no value.
        Section("final_missing", "position", "mask", True),
        # The reduced fields (entropy, the final prediction's probability and rank, KL to it),
        # each made from its metric: sent with the details.
        *(
            Section(metric.field, "cell", metric.unit, False, reduced=True)
            for metric in METRICS.values()
            if metric.reduced
        ),
        # The same two at each prompt's last position only (2 bytes a layer and prompt): the
        # trajectory chart opens on that column, so its final-prediction line is drawn from the
        # first payload, before (or without) the detail sections.
        Section("final_last_probs", "last", "probability", True),
        Section("final_last_ranks", "last", "rank", True),
        Section("topk_tokens", "topk", "token", False),
        Section("topk_probs", "topk", "probability", False),
        # Answers: each set's teacher-forced probability and first-token rank at each prompt's
        # last position, and the first set's first-token values at every cell.
        Section("answer_probs", "prompt_set", "probability", True),
        Section("answer_ranks", "prompt_set", "rank", True),
        # 1 where a cell's top-1 token is one of the first set's answer tokens.
        Section("answer_top1", "cell", "mask", True),
        Section("answer_token_probs", "cell", "probability", False),
        Section("answer_token_ranks", "cell", "rank", False),
        # A tracked token's probability: with the first view, since the trajectory chart draws
        # every tracked token at the column it opens on (and "target" colours by it); a saved
        # notebook that no page asked for details would otherwise show its lines "loading".
        # Only a result with targets has it: one without sends what it did before.
        Section("target_probs", "cell_target", "probability", True),
        Section("target_ranks", "cell_target", "rank", False),
        # Each token group's probability (groups={...}): with the first view, as a target's
        # (the chart draws every group and their sum). Only a result with groups has it.
        Section("group_probs", "cell_group", "probability", True),
        # Generation and chats (per position): 1 where the model generated the token; each
        # token's chat role as an index into meta["roles"] (0 = the template's own tokens).
        Section("generated", "position", "mask", True),
        Section("token_roles", "position", "code", True),
    )
}


#: Direct logit attribution (``LogitLens(model, decompose=True)``): each component's part of a
#: logit, the rest of it (the bias) and the logit, for the "why" panel and the component view.
#: Sent with the detail sections, and only when the result has them (a result without adds
#: nothing to its payload, not even a name in its metadata). Stored as float32, as computed: the
#: panel prints each part and their sum, which must read the same as the result's numbers and
#: add up to the printed logit; one scale per section (as for bits) would make a few large logits
#: (a first position's) coarsen every other cell's parts. NaN stays NaN: a component after the
#: row's point (the MLP of a ``resid_mid`` row's own layer, and every later layer) has no part.
ATTRIBUTION_SECTIONS: dict[str, Section] = {
    section.name: section
    for section in (
        # The cell's top-1 token: each component's part, the bias, the logit (before a soft-cap).
        Section("contributions", "cell_component", "logit", False),
        Section("contribution_bias", "cell", "logit", False),
        Section("top1_logits", "cell", "logit", False),
        # The first answer set's answer (minus the foil's, with foils) at every cell.
        Section("answer_token_contributions", "cell_component", "logit", False),
        Section("answer_token_bias", "cell", "logit", False),
        # The same at each prompt's last position only: sent only by a result without the
        # above (their last-position slice), made before the step attributed every cell.
        Section("answer_row_contributions", "last_component", "logit", False),
        Section("answer_row_bias", "last", "logit", False),
        # Each target at every cell.
        Section("target_contributions", "cell_target_component", "logit", False),
        Section("target_bias", "cell_target", "logit", False),
    )
}

#: The per-cell fields the reductions compute (beyond the top-k, whose first entry is the
#: contract's ``max_probs``/``predicted_tokens``): ``[n_layers, n_inputs, seq]`` in the result.
REDUCED_FIELDS = tuple(name for name, section in SECTIONS.items() if section.reduced)

#: The sections that are a result field read as it is (the payload reads them by name).
RESULT_FIELDS = (
    "input_ids",
    "final_tokens",
    "predicted_tokens",
    "max_probs",
    *REDUCED_FIELDS,
    "topk_tokens",
    "topk_probs",
)


def missing_value(section: Section) -> float:
    """What a cell without a value holds in the result: -1 for ids and ranks, else NaN."""
    return -1 if section.kind in ("token", "rank") else float("nan")


def metric_domain(
    metric: Metric, values: np.ndarray | None, max_entropy: float | None
) -> tuple[float, float]:
    """The colour scale's ``(low, high)`` for ``metric`` over ``values`` (NaN ignored).

    Probabilities span 0 to 1; entropy 0 to the vocabulary's maximum (``log2(vocab)`` bits);
    KL 0 to a round number above its largest value; ranks 0 to one less than a power of ten
    (at least 9), on a log scale.
    """
    if metric.unit == "probability":
        return 0.0, 1.0
    finite = values[np.isfinite(values)] if values is not None else np.zeros(0)
    if metric.unit == "rank":
        top = float(finite.max()) if finite.size else 0.0
        return 0.0, float(max(9, 10 ** math.ceil(math.log10(top + 1)) - 1) if top > 0 else 9)
    if metric.field == "entropy" and max_entropy:
        return 0.0, float(max_entropy)
    if metric.unit == "logit":  # signed: symmetric about 0
        top = float(np.abs(finite).max()) if finite.size else 0.0
        bound = nice_ceil(top) if top > 0 else 1.0
        return -bound, bound
    top = float(finite.max()) if finite.size else 0.0
    return 0.0, nice_ceil(top) if top > 0 else 1.0


def nice_ceil(x: float) -> float:
    """The smallest of 1, 2, 5 or 10 times a power of ten that is at least ``x``."""
    if x <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(x))
    for step in (1, 2, 5, 10):
        if x <= step * power * (1 + 1e-12):
            return float(step * power)
    return float(10 * power)
