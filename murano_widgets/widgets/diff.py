"""``LensDiffWidget``: the difference between two lenses as a heatmap, and ``show_lens_diff``.

The class is thin: typed traits and their validation. The comparison is made by
:mod:`murano_widgets.comparison.compare` and encoded by :mod:`murano_widgets.payload.diff`; the front end
is ``js/src/diff/`` bundled into ``murano_widgets/static/lens_diff.js``.
"""

from __future__ import annotations

from typing import Any

import traitlets

import murano_widgets.metrics as registry
from murano_widgets._checks import check_choice, check_index
from murano_widgets.comparison.compare import LensComparison, compare
from murano_widgets.export import base64_sections
from murano_widgets.payload.codec import section_bytes
from murano_widgets.payload.diff import diff_payload
from murano_widgets.results.result import LogitLensResult
from murano_widgets.widgets.base import MuranoWidget, WidgetValueError, asset, selected_cell

__all__ = ["LensDiffWidget", "show_lens_diff"]


class LensDiffWidget(MuranoWidget):
    """Two lenses compared: rows are ``a``'s layers, columns ``a``'s token positions.

    The colour is the chosen metric: the change ``b - a`` in the chosen token's probability or in
    one of the heatmap's per-cell metrics (a diverging scale, white at 0, orange up, blue down),
    KL(a ‖ b), or whether the top-1 token differs. Cells without a partner are hatched. The tooltip shows both cells' top-k side by
    side; arrows move the focus cell, Enter pins it.

    Args:
        comparison: A :class:`~murano_widgets.comparison.compare.LensComparison`.
        prompt: The prompt shown first.
        metric: ``"delta_prob"``, ``"kl"``, ``"top1_differs"`` or a heatmap metric's change
            (``"delta_entropy"``, ``"delta_final_token_ranks"``, ...: ``DIFF_METRICS``); default
            the first of them the comparison can show.

    Attributes:
        prompt: The shown prompt (synced with the prompt slider).
        metric: The colouring.
        selected: The pinned cell, or ``None``: the front end sends ``prompt``,
            ``layer_index`` and ``position``; Python fills in
            :meth:`LensComparison.describe_cell`.
    """

    _esm = asset("lens_diff.js")
    _css = asset("lens_diff.css")
    _export_what = "lens-diff widget"

    prompt = traitlets.Int(0).tag(sync=True)
    metric = traitlets.Unicode("delta_prob").tag(sync=True)
    selected = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
    _meta = traitlets.Dict().tag(sync=True)
    _sections = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        comparison: LensComparison,
        *,
        prompt: int = 0,
        metric: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(comparison, LensComparison):
            raise TypeError(
                "comparison must be a LensComparison (from compare(a, b) or compare_lenses(...)), "
                f"got {type(comparison).__name__}"
            )
        meta, arrays = diff_payload(comparison)
        prompt = check_index("prompt", prompt, comparison.n_inputs, "prompts")
        if metric is None:
            # The first metric this comparison can show (delta_prob unless no cell knows it).
            metric = next((m["name"] for m in meta["metrics"] if m["available"]), "delta_prob")
        metric = _check_metric(metric, meta, ValueError)
        self._comparison = comparison
        self._arrays = arrays
        super().__init__(
            _meta=meta, _sections=section_bytes(arrays), prompt=prompt, metric=metric, **kwargs
        )

    @property
    def comparison(self) -> LensComparison:
        """The comparison shown."""
        return self._comparison

    @traitlets.validate("prompt")
    def _check_prompt(self, proposal: dict[str, Any]) -> int:
        return check_index(
            "prompt", proposal["value"], self._comparison.n_inputs, "prompts", WidgetValueError
        )

    @traitlets.validate("metric")
    def _validate_metric(self, proposal: dict[str, Any]) -> str:
        return _check_metric(proposal["value"], self._meta, WidgetValueError)

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict[str, Any]) -> dict[str, Any] | None:
        value = proposal["value"]
        if value is None:
            return None
        if not isinstance(value, dict):
            raise WidgetValueError(
                "selected must be None or a dict with prompt, layer_index and position, "
                f"got {type(value).__name__} {value!r}"
            )
        comparison = self._comparison
        prompt = check_index(
            "selected['prompt']",
            value.get("prompt", self.prompt),
            comparison.n_inputs,
            "prompts",
            WidgetValueError,
        )
        row = check_index(
            "selected['layer_index']",
            value.get("layer_index"),
            len(comparison.layers),
            "rows",
            WidgetValueError,
        )
        position = check_index(
            "selected['position']",
            value.get("position"),
            comparison.a.lengths[prompt],
            f"real tokens in prompt {prompt}",
            WidgetValueError,
        )
        return _plain(comparison.describe_cell(prompt, row, position))

    def _standalone_state(self) -> dict[str, Any]:
        return {
            "_meta": self._meta,
            "_sections": base64_sections(self._sections),
            "prompt": self.prompt,
            "metric": self.metric,
            "selected": selected_cell(self.selected),
        }

    def _default_title(self) -> str:
        labels = list(self._meta.get("labels") or ["a", "b"])
        return f"Lens difference — {labels[0]} vs {labels[1]}"

    def __repr__(self) -> str:
        c = self._comparison
        return (
            f"LensDiffWidget({c.n_inputs} prompts, layers {c.layers[0]}..{c.layers[-1]}, "
            f"align={c.align!r}, prompt={self.prompt}, metric={self.metric!r})"
        )


def show_lens_diff(
    a: LogitLensResult | LensComparison,
    b: LogitLensResult | None = None,
    *,
    align: str = "auto",
    token: Any = None,
    prompt: int = 0,
    metric: str | None = None,
) -> LensDiffWidget:
    """The difference between two lens results (or a ready comparison) as a widget.

    Args:
        a: A :class:`LogitLensResult` (then ``b`` is required), or a
            :class:`~murano_widgets.comparison.compare.LensComparison` (then ``b`` must be ``None``).
        b: The result compared with ``a``.
        align, token: As for :func:`~murano_widgets.comparison.compare.compare`.
        prompt: The prompt shown first.
        metric: ``"delta_prob"``, ``"kl"``, ``"top1_differs"`` or a heatmap metric's change
            (``"delta_entropy"``, ...; default: the first available).

    Returns:
        The widget (show it as the last expression of a cell).

    Raises:
        TypeError, ValueError: For a bad pair of arguments, or as :func:`compare` does.
    """
    if isinstance(a, LensComparison):
        if b is not None:
            raise TypeError(
                "show_lens_diff(comparison) takes no b: the comparison already holds both sides"
            )
        comparison = a
    elif b is None:
        raise TypeError(
            "show_lens_diff needs two results, show_lens_diff(a, b), or one LensComparison; "
            f"got a {type(a).__name__} and no b"
        )
    else:
        comparison = compare(a, b, align=align, token=token)
    return LensDiffWidget(comparison, prompt=prompt, metric=metric)


def _check_metric(value: Any, meta: dict[str, Any], error: type) -> str:
    info = next((m for m in meta["metrics"] if m["name"] == value), None)
    if info is not None and "group" in info:  # a token group's change: the payload's own
        return value
    check_choice("metric", value, registry.DIFF_METRICS, error)
    if info is None:  # a change that needs what neither run was given: not listed
        needs = registry.DIFF_METRICS[value].needs
        raise error(
            f"metric {value!r} cannot be shown: needs {needs}: run both sides with answers=[...] "
            f"and {needs}=[...]"
        )
    if not info["available"]:
        raise error(f"metric {value!r} cannot be shown: {info['unavailable_reason']}")
    return value


def _plain(value: Any) -> Any:
    """NaN to ``None`` so that the description travels as JSON."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
