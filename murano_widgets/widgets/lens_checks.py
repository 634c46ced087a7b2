"""The heatmap widget's argument checks: pure functions from a value and what the result holds
to the value shown, or an error naming the argument, what was given and what is allowed.

:class:`~murano_widgets.widgets.lens.LogitLensWidget`'s trait validators and
:func:`~murano_widgets.widgets.show.show_logit_lens`'s early checks (made before any model
runs) both call them, with the error type each needs: a trait error in the widget, a
``ValueError`` at the front door.
"""

from __future__ import annotations

from typing import Any

from murano_widgets._checks import check_choice, check_index, check_layer
from murano_widgets.live.session import LiveSession
from murano_widgets.metrics import METRICS
from murano_widgets.payload.attribution import EXPLAIN_TARGET, explain_choices, has_attribution
from murano_widgets.payload.lens import LensPayload
from murano_widgets.results import LensResults, LogitLensResult
from murano_widgets.widgets.base import WidgetValueError

__all__ = [
    "VIEWS",
    "check_explain",
    "check_lens_beside",
    "check_lens_name",
    "check_live",
    "check_metric",
    "check_shown_layer",
    "check_target",
    "check_view",
    "describe_selection",
    "kept_target",
]

#: The widget's views (the ``view`` trait): the heatmap of layers, or of components (rows are
#: the model's components, each one's direct part of a logit; with ``decompose=True``).
VIEWS = ("layers", "components")


def check_live(live: Any) -> LiveSession | None:
    """The session of ``live=``: a :class:`LiveSession`, or ``None``/``False`` for none."""
    if live is None or live is False:
        return None
    if isinstance(live, LiveSession):
        return live
    raise TypeError(
        "live must be a LiveSession (LiveSession(model, ...), whose run(prompts) makes the "
        "result) or None; show_logit_lens(model, ...) makes a live widget itself; got "
        f"{type(live).__name__} {live!r:.60}"
    )


def check_shown_layer(value: Any, layers: list[int], error: type = WidgetValueError) -> int:
    """A model layer that is one of the result's rows, as a trait error (or ``error``)."""
    return check_layer(value, layers, error, error)


def check_lens_name(value: Any, results: LensResults, error: type = WidgetValueError) -> str:
    """One of the widget's lens names."""
    if not isinstance(value, str) or value not in results:
        raise error(f"lens_name must be one of the widget's lenses {results.names}; got {value!r}")
    return value


def check_lens_beside(
    value: Any, names: list[str], shown: str, error: type = WidgetValueError
) -> str:
    """The lens drawn as a second grid beside the lens ``shown``: another of ``names``, or
    ``""`` for one grid."""
    others = [name for name in names if name != shown]
    if not isinstance(value, str) or (value and value not in others):
        why = f" ({value!r} is the lens shown, lens_name: choose another)" if value == shown else ""
        allowed = f"'' (one grid) or another of the widget's lenses {others}" if others else "''"
        if len(names) < 2:
            allowed += " (the widget holds one lens: give it several, lens={...})"
        raise error(f"lens_beside must be {allowed}; got {value!r}{why}")
    return value


def check_explain(value: Any, result: LogitLensResult) -> str:
    """One of the things the result's attribution explains; a target's text alone is taken."""
    choices = explain_choices(result)
    if isinstance(value, str) and value not in choices and EXPLAIN_TARGET + value in choices:
        value = EXPLAIN_TARGET + value
    if not isinstance(value, str) or value not in choices:
        why = (
            ""
            if has_attribution(result)
            else " (this result has no direct logit attribution: run with decompose=True)"
        )
        raise WidgetValueError(f"explain must be one of {choices}{why}; got {value!r}")
    return value


def check_view(value: Any, result: LogitLensResult) -> str:
    """One of :data:`VIEWS`; the component view needs the attribution."""
    check_choice("view", value, VIEWS, WidgetValueError)
    if value == "components" and not has_attribution(result):
        raise WidgetValueError(
            "view='components' needs the direct logit attribution: run with decompose=True"
        )
    return value


def check_target(value: Any, targets: list[str] | None, error: type = WidgetValueError) -> str:
    """One of the tracked tokens, or ``""`` when none is tracked."""
    targets = list(targets or [])
    if isinstance(value, str) and (value in targets or (value == "" and not targets)):
        return value
    given = f"{type(value).__name__} {value!r:.60}" if not isinstance(value, str) else repr(value)
    if not targets:
        raise error(
            f"target must be '' while no token is tracked (track one with w.track(text), or "
            f"pass targets=[...]); got {given}"
        )
    raise error(f"target must be one of the tracked tokens {targets}; got {given}")


def check_group(value: Any, groups: list[str] | None, error: type = WidgetValueError) -> str:
    """One of the result's token groups (``groups={...}``), or ``""`` when it has none."""
    groups = list(groups or [])
    if isinstance(value, str) and (value in groups or (value == "" and not groups)):
        return value
    given = f"{type(value).__name__} {value!r:.60}" if not isinstance(value, str) else repr(value)
    if not groups:
        raise error(
            f"group must be '' for a result without token groups (groups={{...}}); got {given}"
        )
    raise error(f"group must be one of the result's token groups {groups}; got {given}")


def kept_target(current: str, before: list[str], result: LogitLensResult) -> str:
    """The token shown after the targets changed: the same one while it is tracked; else the
    one now in its place (the next, or the last), as a removed prompt gives way; ``""`` when
    none is left."""
    targets = list(result.targets or [])
    if current in targets:
        return current
    if not targets:
        return ""
    index = before.index(current) if current in before else 0
    return targets[min(index, len(targets) - 1)]


def check_metric(value: Any, payload: LensPayload) -> str:
    """A metric of the registry that this payload can show."""
    check_choice("metric", value, METRICS, WidgetValueError)
    info = payload.metric(value)
    if not info["available"]:
        raise WidgetValueError(f"metric {value!r} cannot be shown: {info['unavailable_reason']}")
    return value


def describe_selection(result: LogitLensResult, value: Any, default_prompt: int) -> dict[str, Any]:
    """The full description of a pinned cell, from the dict naming it that the front end sends."""
    if not isinstance(value, dict):
        raise WidgetValueError(
            "selected must be None or a dict with layer_index and position, "
            f"got {type(value).__name__} {value!r}"
        )
    if "layer_index" not in value and "layer" in value:
        check_shown_layer(value["layer"], result.layers)
        value = {**value, "layer_index": result.layers.index(value["layer"])}
    prompt = value.get("prompt", default_prompt)
    # Checked here as well as in describe_cell, to name the key of `selected`.
    prompt = check_index("selected['prompt']", prompt, result.n_inputs, "prompts", WidgetValueError)
    row = check_index(
        "selected['layer_index']",
        value.get("layer_index"),
        len(result.layers),
        "rows",
        WidgetValueError,
    )
    position = check_index(
        "selected['position']",
        value.get("position"),
        result.lengths[prompt],
        f"real tokens in prompt {prompt}",
        WidgetValueError,
    )
    return result.describe_cell(prompt, row, position)
