"""``LogitLensWidget``: the interactive heatmap, and ``show_logit_lens``, the one-call entry."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ._adapters import as_lens_result
from .logit_lens import LogitLens
from .model import ModelBackend
from .payload import LensPayload
from .result import LogitLensResult
from .types import PromptBatch, Results, validate_prompts

__all__ = ["METRICS", "LogitLensWidget", "WidgetValueError", "show_logit_lens"]

METRICS = ("prob", "entropy", "final_prob", "final_rank", "kl")
"""The colourings of the heatmap: top-1 probability, entropy (bits), probability and rank of the
model's final prediction, and KL(final ‖ layer) in bits."""


class WidgetValueError(traitlets.TraitError, ValueError):
    """A widget trait was set to a value out of its range."""


def _asset(name: str) -> Path:
    """The front-end file ``name``: inside the installed package, or in the source tree's js/."""
    packaged = resources.files("murano_widgets") / "static" / name
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "js" / name


class LogitLensWidget(anywidget.AnyWidget):
    """The logit lens as an interactive heatmap: rows are layers, columns token positions.

    Args:
        result: A :class:`LogitLensResult`, or a result of the released ``murano`` library
            (it has ``layer_indices`` and ``all_probs``; the reduced fields are computed here).
        prompt: The prompt shown first.
        layer: The row highlighted first, as an index into the result's layers (default: the
            last, i.e. the highest layer).
        metric: The colouring, one of :data:`METRICS`.
        tokenizer: Only for ``murano`` results: decodes their top-k tokens.

    Attributes:
        prompt: The index of the shown prompt (synced with the prompt slider).
        layer: The highlighted row, an index into the result's layers (the layer slider).
        metric: The colouring, one of :data:`METRICS`.
        selected: The pinned cell, or ``None``: a dict with ``prompt``, ``layer_index``,
            ``layer`` (the model layer), ``position`` (among the prompt's real tokens),
            ``sequence_index`` (into the result's padded tensors), ``input_token``,
            ``predicted_token``, ``probability`` and ``top_k`` (token, probability) pairs.
    """

    _esm = _asset("logit_lens.js")
    _css = _asset("logit_lens.css")

    prompt = traitlets.Int(0).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    metric = traitlets.Unicode("prob").tag(sync=True)
    selected = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
    _details = traitlets.Bool(False).tag(sync=True)
    _meta = traitlets.Dict().tag(sync=True)
    _sections = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        result: Any,
        *,
        prompt: int = 0,
        layer: int | None = None,
        metric: str = "prob",
        tokenizer: Any = None,
        **kwargs: Any,
    ) -> None:
        lens = as_lens_result(result, tokenizer=tokenizer).validate()
        payload = LensPayload.from_result(lens)
        self._lens = lens
        self._payload = payload
        super().__init__(
            _meta=payload.meta,
            _sections=payload.base_sections(),
            **kwargs,
        )
        self.prompt = prompt
        self.layer = len(lens.layers) - 1 if layer is None else layer
        self.metric = metric

    @property
    def result(self) -> LogitLensResult:
        """The result shown (converted, for a ``murano`` result)."""
        return self._lens

    @traitlets.validate("prompt")
    def _check_prompt(self, proposal: dict[str, Any]) -> int:
        return _check_index("prompt", proposal["value"], self._lens.n_inputs, "prompts")

    @traitlets.validate("layer")
    def _check_layer(self, proposal: dict[str, Any]) -> int:
        return _check_index("layer", proposal["value"], len(self._lens.layers), "rows")

    @traitlets.validate("metric")
    def _check_metric(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value not in METRICS:
            raise WidgetValueError(f"metric must be one of {', '.join(METRICS)}; got {value!r}")
        return value

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict[str, Any]) -> dict[str, Any] | None:
        value = proposal["value"]
        if value is None:
            return None
        return _describe_cell(self._lens, value, default_prompt=self.prompt)

    @traitlets.observe("metric")
    def _on_metric(self, change: dict[str, Any]) -> None:
        if change["new"] != "prob":
            self._details = True

    @traitlets.observe("_details")
    def _on_details(self, change: dict[str, Any]) -> None:
        if change["new"]:
            self._sections = self._payload.all_sections()

    def payload_nbytes(self) -> dict[str, int]:
        """Bytes of each section now synced, and of the string table (as JSON)."""
        import json

        sizes = {name: len(data) for name, data in self._sections.items()}
        sizes["tokens_table"] = len(json.dumps(self._meta["tokens"]).encode())
        return sizes

    def save_html(self, path: str | Path, *, title: str | None = None) -> Path:
        """Writes a self-contained HTML file that renders this widget with no kernel.

        The file inlines the ES module, the stylesheet and every payload section; it loads
        nothing from the network.
        """
        from .export import write_html

        return write_html(self, path, title=title)

    def to_html(self, *, title: str | None = None) -> str:
        """The self-contained HTML page of :meth:`save_html`, as a string."""
        from .export import widget_html

        return widget_html(self, title=title)

    def _ipython_display_(self) -> None:
        # show_logit_lens displays the widget itself and returns it; when that return value is
        # also the cell's result, IPython would display it a second time.
        if getattr(self, "_shown_by_call", False):
            self._shown_by_call = False
            return
        from IPython.display import display

        # anywidget returns (data, metadata); ipywidgets returned the data dict alone.
        bundle = self._repr_mimebundle_()
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        display(data, metadata=metadata, raw=True)

    def __repr__(self) -> str:
        lens = self._lens
        return (
            f"LogitLensWidget({lens.n_inputs} prompts, layers {lens.layers[0]}..{lens.layers[-1]}, "
            f"prompt={self.prompt}, layer={self.layer}, metric={self.metric!r})"
        )


def show_logit_lens(
    model: ModelBackend,
    prompts: str | Sequence[str],
    layers: Sequence[int] | str = "all",
    *,
    prompt: int = 0,
    layer: int | None = None,
    metric: str = "prob",
    **step_options: Any,
) -> LogitLensWidget:
    """Runs the logit lens on ``prompts`` and shows it as an interactive widget.

    Args:
        model: The model, e.g. ``MuranoModel("gpt2")`` or ``load_demo_model()``.
        prompts: One prompt or a list of prompts.
        layers: ``"all"`` or a list of layer indices.
        prompt: The prompt shown first.
        layer: The row highlighted first (an index into ``layers``; default the highest).
        metric: The colouring, one of :data:`METRICS`.
        **step_options: Passed to :class:`LogitLens` (``top_k``, ``max_chunk_bytes``, ...).

    Returns:
        The widget (already displayed when running in a notebook).
    """
    if isinstance(prompts, str):
        prompts = [prompts]
    prompts = validate_prompts(prompts)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}; got {metric!r}")
    step = LogitLens(model, layers, **step_options)
    results = Results(prompts=PromptBatch(prompts))
    lens = step(results)["logit_lens"]
    widget = LogitLensWidget(lens, prompt=prompt, layer=layer, metric=metric)
    _display_in_notebook(widget)
    return widget


def _display_in_notebook(widget: LogitLensWidget) -> None:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    from IPython.display import display

    display(widget)
    widget._shown_by_call = True

    def forget(*_: Any) -> None:
        widget._shown_by_call = False
        shell.events.unregister("post_execute", forget)

    shell.events.register("post_execute", forget)


def _check_index(name: str, value: Any, size: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WidgetValueError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        raise WidgetValueError(
            f"{name} must be from 0 to {size - 1} (the result has {size} {what}); got {value}"
        )
    return value


def _describe_cell(lens: LogitLensResult, value: Any, default_prompt: int) -> dict[str, Any]:
    """The full, exact description of a pinned cell, from a dict naming it."""
    if not isinstance(value, dict):
        raise WidgetValueError(
            "selected must be None or a dict with layer_index and position, "
            f"got {type(value).__name__} {value!r}"
        )
    prompt = _check_index(
        "selected['prompt']", value.get("prompt", default_prompt), lens.n_inputs, "prompts"
    )
    if "layer_index" not in value and "layer" in value:
        if value["layer"] not in lens.layers:
            raise WidgetValueError(
                f"selected['layer'] must be one of the result's layers {lens.layers}; got {value['layer']!r}"
            )
        value = {**value, "layer_index": lens.layers.index(value["layer"])}
    row = _check_index(
        "selected['layer_index']", value.get("layer_index"), len(lens.layers), "rows"
    )
    positions = lens.positions(prompt).tolist()
    position = _check_index(
        "selected['position']",
        value.get("position"),
        len(positions),
        f"real tokens in prompt {prompt}",
    )
    seq = positions[position]
    cell = (row, prompt, seq)
    described: dict[str, Any] = {
        "prompt": prompt,
        "layer_index": row,
        "layer": lens.layers[row],
        "position": position,
        "sequence_index": seq,
        "input_token": lens.input_words[prompt][seq],
        "predicted_token": lens.predicted_words[row][prompt][seq],
        "probability": float(lens.max_probs[cell]),
    }
    if lens.topk_tokens is not None and lens.token_strings is not None:
        described["top_k"] = [
            (lens.token_strings.get(int(token), ""), float(prob))
            for token, prob in zip(
                lens.topk_tokens[cell].tolist(), lens.topk_probs[cell].tolist(), strict=True
            )
        ]
    for name in ("entropy", "final_token_probs", "final_token_ranks", "kl_to_final"):
        field = getattr(lens, name)
        if field is not None:
            described[name] = field[cell].item()
    return described
