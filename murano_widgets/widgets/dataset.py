"""The data-set widget: per-layer curves, the prompts behind a layer, and their heatmaps.

:class:`LensDatasetWidget` is a box of two widgets: :class:`DatasetChart` (an anywidget with its
own front end, ``static/lens_dataset.js``) and, once a prompt is chosen, that prompt's
:class:`~murano_widgets.LogitLensWidget` below it. The heatmap is a widget of its own, put in
the box by Python, so that it works in every front end that shows ipywidgets (no front end has
to build one widget's view inside another's).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import ipywidgets
import numpy as np
import traitlets

from murano_widgets._checks import check_index, check_model
from murano_widgets.dataset.group_view import group_metrics
from murano_widgets.export import base64_sections
from murano_widgets.lenses import as_lens, named_lenses, title_of
from murano_widgets.metrics import Metric
from murano_widgets.widgets.base import MuranoWidget, WidgetValueError, asset
from murano_widgets.widgets.lens import LogitLensWidget
from murano_widgets.widgets.show import show_logit_lens

if TYPE_CHECKING:
    from murano_widgets.dataset.lens_dataset import LensDataset

__all__ = ["DatasetChart", "LensDatasetWidget"]


class DatasetChart(MuranoWidget):
    """The curves and the prompt list (the front end of :class:`LensDatasetWidget`).

    Attributes:
        layer: The chosen model layer (its prompts are listed), or ``None``.
        answer_set: The answer set whose prompts are listed.
        lens_name: With several lenses side by side: the lens whose prompts are listed (and
            whose heatmap opens first); ``""`` for a data set of one lens.
        order: ``"best"`` (rank 0 first) or ``"worst"``.
        metric: What the curves show: one of :data:`murano_widgets.metrics.DATASET_CHART`
            that the data set holds: ``"answer_prob"``, ``"top1_accuracy"``, ``"committed"``
            (the share of prompts whose answer is the top-1 from the layer on), or the mean of
            a heatmap metric at the prompts' last position (``"entropy"``, ``"kl"``, ...).
        open_request: What the front end last asked to open: ``{"prompt", "answer_set",
            "lens", "n"}``.
        status: A line of text from Python (what was opened, or why it could not be).
    """

    _esm = asset("lens_dataset.js")
    _css = asset("lens_dataset.css")
    _export_what = "data-set chart"

    layer = traitlets.Int(None, allow_none=True).tag(sync=True)
    answer_set = traitlets.Unicode("").tag(sync=True)
    lens_name = traitlets.Unicode("").tag(sync=True)
    order = traitlets.Unicode("best").tag(sync=True)
    metric = traitlets.Unicode("answer_prob").tag(sync=True)
    open_request = traitlets.Dict(None, allow_none=True).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    _meta = traitlets.Dict().tag(sync=True)
    _data = traitlets.Dict().tag(sync=True)

    def __init__(self, dataset: LensDataset, meta: dict[str, Any], **kwargs: Any) -> None:
        self._dataset = dataset
        data = {}
        # One series per lens and answer set, in meta["sets"] order (lens by lens).
        series = [
            (arrays, name) for _, arrays in dataset._lens_tables() for name in dataset.answers
        ]
        for j, (arrays, name) in enumerate(series):
            # The chart reads one row per prompt: [n_prompts, n_layers].
            data[f"prob_{j}"] = arrays["answer_probs"][name].T.astype("<f4").tobytes()
            data[f"rank_{j}"] = arrays["answer_ranks"][name].T.astype("<i4").tobytes()
        super().__init__(
            _meta=meta,
            _data=data,
            answer_set=next(iter(dataset.answers)),
            lens_name=(dataset.lens_names or [""])[0],
            **kwargs,
        )

    def _standalone_state(self) -> dict[str, Any]:
        # Without a kernel no prompt's heatmap can be opened; the front end says so.
        return {
            "_meta": self._meta,
            "_data": base64_sections(self._data),
            "layer": self.layer,
            "answer_set": self.answer_set,
            "lens_name": self.lens_name,
            "order": self.order,
            "metric": self.metric,
        }

    def _default_title(self) -> str:
        return self._meta.get("title") or "Data set"

    @traitlets.validate("layer")
    def _check_layer(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is not None and value not in self._dataset.layers:
            raise WidgetValueError(
                f"layer must be None or one of the data set's layers {self._dataset.layers}; "
                f"got {value!r}"
            )
        return value

    @traitlets.validate("answer_set")
    def _check_answer_set(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in self._dataset.answers:
            raise WidgetValueError(
                f"answer_set must be one of {list(self._dataset.answers)}; got {proposal['value']!r}"
            )
        return proposal["value"]

    @traitlets.validate("lens_name")
    def _check_lens_name(self, proposal: dict[str, Any]) -> str:
        names = self._dataset.lens_names or [""]
        if proposal["value"] not in names:
            allowed = names if self._dataset.lens_names else "'' (this data set holds one lens)"
            raise WidgetValueError(f"lens_name must be one of {allowed}; got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.validate("order")
    def _check_order(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in ("best", "worst"):
            raise WidgetValueError(f"order must be 'best' or 'worst'; got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.validate("metric")
    def _check_metric(self, proposal: dict[str, Any]) -> str:
        charted = [m["name"] for m in self._meta["metrics"] if m["interval"]]
        if proposal["value"] not in charted:
            raise WidgetValueError(f"metric must be one of {charted}; got {proposal['value']!r}")
        return proposal["value"]


class LensDatasetWidget(ipywidgets.VBox):
    """A :class:`~murano_widgets.LensDataset` to explore: made by ``dataset.show()``.

    Hover over the chart to read a layer's values; click a layer to list its prompts ordered by
    the answer's rank there; click a prompt to open its heatmap below (the lens is run again on
    that one prompt, with the model and lens the data set was made with, or those given).

    Attributes:
        chart: The curves and the prompt list (:class:`DatasetChart`; its ``layer``,
            ``answer_set`` and ``order`` traits can be set from Python too).
        heatmap: The heatmap of the last prompt opened, or ``None``.
        opened: ``(prompt index, answer set)`` of that prompt, or ``None``.
    """

    def __init__(
        self,
        dataset: LensDataset,
        *,
        model: Any = None,
        lens: Any = None,
        ci: float = 0.95,
        n_boot: int = 1000,
        seed: int | None = 0,
    ) -> None:
        self.dataset = dataset
        self._model = model if model is not None else dataset._model
        self._lens = lens if lens is not None else dataset._lens
        if model is not None:
            _check_same_model(model, dataset)
        if lens is not None:
            _check_lenses(lens, dataset, self._model)
        reason = self._cannot_open_reason()
        summary = dataset.summary(ci=ci, n_boot=n_boot, seed=seed)
        # Token groups: a chart metric each, and one drawing them all (dataset/group_view.py).
        each_group, all_groups = group_metrics(dataset.group_names)
        metrics = [*dataset.metrics, *each_group]
        titles = {entry["name"]: entry["title"] for entry in dataset.provenance.get("lenses", [])}
        sets = []
        for lens_name, _ in dataset._lens_tables():
            for name in dataset.answers:
                rows = summary
                if lens_name is not None:
                    rows = rows[rows["lens"] == lens_name]
                if dataset.named_sets:
                    rows = rows[rows["answer_set"] == name]
                sets.append(
                    {
                        "name": name,
                        "lens": lens_name,
                        "answers": dataset.answer_labels(name),
                        "n_prompts": sum(forms is not None for forms in dataset.answers[name]),
                        "summary": _summary_lists(rows, metrics),
                    }
                )
        meta = {
            "layers": dataset.layers,
            "prompts": dataset.prompts,
            "title": _title(dataset),
            "ci": ci,
            "can_open": reason is None,
            "cannot_open_reason": reason or "",
            "lenses": [
                {"name": name, "title": titles.get(name, name)} for name in dataset.lens_names or []
            ],
            "sets": sets,
            "metrics": [metric.as_json() for metric in [*metrics, *all_groups]],
        }
        if dataset.group_names:  # absent without groups: such a payload is as it was
            meta["groups"] = dataset.group_names
        self.chart = DatasetChart(dataset, meta)
        self.heatmap: LogitLensWidget | None = None
        self.opened: tuple[int, str] | None = None
        super().__init__(children=[self.chart])
        self.chart.observe(self._on_request, names="open_request")

    def save_html(self, path: Any, *, title: str | None = None) -> Any:
        """Writes the chart as a self-contained HTML page (see
        :meth:`murano_widgets.widgets.base.MuranoWidget.save_html`); a prompt's heatmap cannot be
        opened there, which the page says."""
        return self.chart.save_html(path, title=title)

    def to_html(self, *, title: str | None = None) -> str:
        """The page of :meth:`save_html`, as a string."""
        return self.chart.to_html(title=title)

    def _cannot_open_reason(self) -> str | None:
        if self._model is None:
            where = f" from {self.dataset._source}" if self.dataset._source else ""
            return (
                f"Cannot open a heatmap: this data set was loaded{where} without its model, and "
                "a heatmap runs the lens again on the prompt. Show it with the model: "
                "dataset.show(model=...) (the model it was made with: "
                f"{self.dataset.provenance.get('model_name')!r})."
            )
        provenance = self.dataset.provenance
        if "lenses" in provenance:
            kinds = [entry["kind"] for entry in provenance["lenses"]]
            if any(kind != "logit" for kind in kinds) and self._lens is None:
                names = ", ".join(f"{entry['name']!r}: ..." for entry in provenance["lenses"])
                return (
                    "Cannot open a heatmap: this data set was made with the lenses "
                    f"{[entry['name'] for entry in provenance['lenses']]}; show it with them: "
                    f"dataset.show(model=..., lens={{{names}}})."
                )
            return None
        kind = provenance.get("lens_kind", "logit")
        if kind != "logit" and self._lens is None:
            return (
                f"Cannot open a heatmap: this data set was made with the "
                f"{title_of(provenance)}; "
                "show it with that lens: dataset.show(model=..., lens=...)."
            )
        return None

    def _on_request(self, change: dict[str, Any]) -> None:
        request = change["new"]
        if not request:
            return
        # A click in the page: report problems in the widget, where the user is looking (an
        # exception raised here would go to the kernel's log, not to the notebook).
        try:
            self.open_prompt(request.get("prompt"), request.get("answer_set"), request.get("lens"))
        except Exception as error:
            self.chart.status = f"Cannot open prompt {request.get('prompt')!r}: {error}"

    def open_prompt(
        self, prompt: int, answer_set: str | None = None, lens: str | None = None
    ) -> LogitLensWidget:
        """Opens the heatmap of one prompt below the chart (what clicking it does).

        With several lenses side by side the heatmap holds them all (its lens menu switches),
        showing ``lens`` first.

        Args:
            prompt: The prompt's index in the data set.
            answer_set: Whose answer to mark (default: the set the chart lists).
            lens: With several lenses: the one shown first (default: the one the chart lists).

        Returns:
            The heatmap widget (also :attr:`heatmap`).

        Raises:
            ValueError: For a prompt or answer set out of range.
            RuntimeError: When there is no model to run the lens with (a loaded data set shown
                without ``model=``).
        """
        dataset = self.dataset
        prompt = check_index("prompt", prompt, dataset.n_prompts, "prompts")
        name = answer_set if answer_set is not None else self.chart.answer_set
        if name not in dataset.answers:
            raise ValueError(f"answer_set must be one of {list(dataset.answers)}; got {name!r}")
        reason = self._cannot_open_reason()
        if reason is not None:
            raise RuntimeError(reason)
        forms = dataset.answers[name][prompt]
        options: dict[str, Any] = {"lens": self._lens}
        if dataset.lens_names:
            shown = lens or self.chart.lens_name
            if shown not in dataset.lens_names:
                raise ValueError(f"lens must be one of {dataset.lens_names}; got {lens!r}")
            options["lens"] = (
                self._lens if self._lens is not None else dict.fromkeys(dataset.lens_names)
            )
            options["lens_name"] = shown
        if dataset.provenance.get("variants"):
            options["variants"] = True
        heatmap = show_logit_lens(
            self._model,
            [dataset.prompts[prompt]],
            layers=dataset.layers,
            answers=None if forms is None else [forms],
            layer=self.chart.layer,
            **options,
        )
        self.heatmap, self.opened = heatmap, (prompt, name)
        self.children = [self.chart, heatmap]
        answer = "" if forms is None else f" (answer {forms[0]!r})"
        self.chart.status = f"Opened prompt {prompt}{answer} below."
        return heatmap

    def __repr__(self) -> str:
        return (
            f"LensDatasetWidget({self.dataset!r}, layer={self.chart.layer}, opened={self.opened})"
        )


def _check_same_model(model: Any, dataset: LensDataset) -> None:
    """A model given to ``show`` must be a loaded model with the data set's layers; another
    name only warns."""
    n_layers = check_model(model).n_layers
    if max(dataset.layers) >= int(n_layers):
        raise ValueError(
            f"model has {n_layers} layers, but the data set holds layers up to "
            f"{max(dataset.layers)}: it was made with {dataset.provenance.get('model_name')!r}"
        )
    made_with = dataset.provenance.get("model_name")
    if made_with is not None and getattr(model, "name", None) != made_with:
        warnings.warn(
            f"the data set was made with {made_with!r}, not {getattr(model, 'name', None)!r}: "
            "the heatmaps will show another model's lens",
            stacklevel=3,
        )


def _check_lenses(lens: Any, dataset: LensDataset, model: Any) -> None:
    """The lenses given to ``show``: one lens for a data set of one, the same names for lenses
    side by side."""
    names = dataset.lens_names
    if names is None:
        as_lens(lens, model)
        return
    given = named_lenses(lens, model)
    if given is None or list(given) != names:
        raise ValueError(
            f"this data set holds the lenses {names}: give lens= as a dict of the same names, "
            f"in that order; got {list(given) if given is not None else type(lens).__name__}"
        )


def _summary_lists(table: Any, metrics: list[Metric]) -> dict[str, list[float | None]]:
    """The summary columns the data set's ``metrics`` read, by their names, as JSON-safe lists
    (NaN → None)."""
    columns = [column for metric in metrics for column in (metric.field, *(metric.interval or ()))]
    return {
        column: [
            None if not math.isfinite(v) else float(v) for v in np.asarray(table[column], float)
        ]
        for column in columns
    }


def _title(dataset: LensDataset) -> str:
    name = str(dataset.provenance.get("model_name") or "model").rstrip("/\\")
    short = name.replace("\\", "/").rsplit("/", 1)[-1] or name
    lenses = dataset.provenance.get("lenses")
    what = (
        title_of(dataset.provenance)
        if lenses is None
        else ", ".join(entry["title"] for entry in lenses)
    )
    return f"{short} · {what} · {dataset.n_prompts} prompts"
