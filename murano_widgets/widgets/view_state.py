"""The heatmap's view state, declared once: one table of the view traits.

Each line of :data:`VIEW_TRAITS` names one thing the heatmap's view shows and a user may set
(``prompt``, ``layer``, ``metric``, ...): its trait type, its default, its check against a
result, and its check before any model runs. Everything else comes from the table:

- :class:`~murano_widgets.widgets.lens.LogitLensWidget`'s synced traits and their validators
  (:func:`trait_namespace`), its constructor's keywords (:func:`initial_view`, which also
  refuses an unknown keyword), and the state an exported page starts from (:func:`view_of`);
- the checks :func:`~murano_widgets.widgets.show.show_logit_lens` makes before the model runs
  (:func:`check_planned`);
- the front end's store: ``js/src/heatmap/view/view_state.js`` lists the same names, with the
  feature module that applies each (``tests/test_house.py`` holds the two lists equal).

A new view trait is one line here (and :class:`ViewOptions`'s, for type checkers) plus the
feature module that shows it (``docs/contributing.md``, "A view trait").
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypedDict

import traitlets

from murano_widgets._checks import check_bool, check_choice, check_index
from murano_widgets.chat import check_hide_template
from murano_widgets.metrics import METRICS
from murano_widgets.payload.attribution import EXPLAIN_TOP1
from murano_widgets.payload.lens import LensPayload
from murano_widgets.results import LensResults, LogitLensResult
from murano_widgets.widgets.base import WidgetValueError
from murano_widgets.widgets.lens_checks import (
    VIEWS,
    check_explain,
    check_group,
    check_lens_beside,
    check_lens_name,
    check_metric,
    check_shown_layer,
    check_target,
    check_view,
)

__all__ = [
    "VIEW_TRAITS",
    "Planned",
    "Shown",
    "ViewOptions",
    "ViewTrait",
    "check_planned",
    "initial_view",
    "trait_namespace",
    "view_of",
]


@dataclass(frozen=True)
class Shown:
    """What a view trait is checked against once there is a result: every lens's result, the
    payload, and the lens shown (a trait after ``lens`` in the table reads the one chosen)."""

    results: LensResults
    payload: LensPayload
    lens: str

    @property
    def result(self) -> LogitLensResult:
        """The result of the lens shown."""
        return self.results[self.lens or self.results.names[0]]


class Planned:
    """What :func:`~murano_widgets.widgets.show.show_logit_lens` knows before the model runs.

    Args:
        n_prompts: How many prompts will run (``None``: unknown yet, the run names it).
        layers: The layers asked for, resolved against the model only when a check needs them.
        targets: The tracked tokens asked for.
        lens_names: The lenses' names, worked out only when a check needs them.
        chosen: The view values given (a check reads another's, as ``lens_beside`` the lens).
        chat: Whether the prompts are chats.
        decompose: Whether the attribution will be computed.
    """

    def __init__(
        self,
        *,
        n_prompts: int | None,
        layers: Callable[[], list[int]],
        targets: list[str],
        lens_names: Callable[[], list[str]],
        chosen: Mapping[str, Any],
        chat: bool,
        decompose: bool,
    ) -> None:
        self.n_prompts = n_prompts
        self._layers = layers
        self.targets = targets
        self._lens_names = lens_names
        self.chosen = chosen
        self.chat = chat
        self.decompose = decompose

    @cached_property
    def layers(self) -> list[int]:
        """The model layers the result will hold."""
        return self._layers()

    @cached_property
    def lens_names(self) -> list[str]:
        """The names of the lenses the result will hold, in menu order."""
        return self._lens_names()


@dataclass(frozen=True)
class ViewTrait:
    """One view trait: a line of :data:`VIEW_TRAITS`.

    Attributes:
        name: The trait's name, the same in Python, in the synced state and in the front end's
            store.
        kind: Its traitlets type (``traitlets.Int``, ``traitlets.Unicode``, ``traitlets.Bool``).
        default: The constructor's value when the keyword is left out; ``None``: the check picks
            it from the result (the highest layer, the first lens, the first tracked token).
        check: ``check(value, shown)``: the value shown, or a :class:`WidgetValueError` naming
            the trait, what was given and what is allowed (``None`` only for a default of
            ``None``).
        planned: ``planned(value, plan)``: the same check before any model runs, from what the
            run was asked for; raises ``ValueError``/``TypeError``.
        old_names: Earlier public names of the trait, still taken (``lens_name`` for ``lens``).
        argument: What :func:`show_logit_lens` calls it (its ``lens=`` is the lens itself); a
            trait it does not take starts at its default.
    """

    name: str
    kind: type[traitlets.TraitType]
    default: Any
    check: Callable[[Any, Shown], Any]
    planned: Callable[[Any, Planned], None]
    old_names: tuple[str, ...] = field(default=())
    argument: str = ""

    @property
    def show_argument(self) -> str:
        """The keyword :func:`show_logit_lens` takes it by."""
        return self.argument or self.name

    def trait(self) -> traitlets.TraitType:
        """A fresh synced trait of this line (its default: the table's, else the type's)."""
        blank = self.kind().default_value
        return self.kind(blank if self.default is None else self.default).tag(sync=True)


# ------------------------------------------------------------------------------------------------
# Each trait's checks (pure functions: a value, what it is checked against)


def _lens(value: Any, shown: Shown) -> str:
    return shown.results.names[0] if value is None else check_lens_name(value, shown.results)


def _lens_planned(value: Any, plan: Planned) -> None:
    if value is not None and value not in plan.lens_names:
        raise ValueError(f"lens_name must be one of the lenses {plan.lens_names}; got {value!r}")


def _lens_beside(value: Any, shown: Shown) -> str:
    return check_lens_beside(value, shown.results.names, shown.lens)


def _lens_beside_planned(value: Any, plan: Planned) -> None:
    if value != "":
        lens = plan.chosen.get("lens")
        shown = plan.lens_names[0] if lens is None else lens
        check_lens_beside(value, plan.lens_names, shown, ValueError)


def _prompt(value: Any, shown: Shown) -> int:
    return check_index("prompt", value, shown.result.n_inputs, "prompts", WidgetValueError)


def _prompt_planned(value: Any, plan: Planned) -> None:
    if plan.n_prompts:
        check_index("prompt", value, plan.n_prompts, "prompts")


def _layer(value: Any, shown: Shown) -> int:
    layers = shown.result.layers
    return layers[-1] if value is None else check_shown_layer(value, layers)


def _layer_planned(value: Any, plan: Planned) -> None:
    if value is not None:
        check_shown_layer(value, plan.layers, error=ValueError)


def _metric(value: Any, shown: Shown) -> str:
    return check_metric(value, shown.payload)


def _metric_planned(value: Any, plan: Planned) -> None:
    check_choice("metric", value, METRICS)
    if METRICS[value].per_target and not plan.targets:
        raise ValueError(
            f"metric={value!r} shows a tracked token's probability: pass targets=[...]"
        )


def _target(value: Any, shown: Shown) -> str:
    targets = shown.result.targets
    if value is None:
        return targets[0] if targets else ""
    return check_target(value, targets)


def _target_planned(value: Any, plan: Planned) -> None:
    if value is not None:
        check_target(value, plan.targets, ValueError)


def _group(value: Any, shown: Shown) -> str:
    groups = shown.result.group_names
    if value is None:
        return groups[0] if groups else ""
    return check_group(value, groups)


def _group_planned(value: Any, plan: Planned) -> None:
    # Groups come from groups={...} as the run makes them: the widget checks the name.
    if value is not None and not isinstance(value, str):
        raise TypeError(f"group must be a string, got {type(value).__name__} {value!r:.60}")


def _position(value: Any, shown: Shown) -> int:
    longest = max(shown.result.lengths, default=1)
    return check_index("position", value, longest, "positions at most", WidgetValueError)


def _position_planned(value: Any, plan: Planned) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"position must be a position (an int >= 0); got {value!r:.60}")


def _hide_template(value: Any, shown: Shown) -> bool:
    return check_hide_template(value, shown.result.token_roles, WidgetValueError)


def _hide_template_planned(value: Any, plan: Planned) -> None:
    if check_bool("hide_template", value) and not plan.chat:
        raise ValueError(
            "hide_template=True is not allowed without chat: only a chat has template tokens "
            "to hide; got hide_template=True"
        )


def _explain(value: Any, shown: Shown) -> str:
    return check_explain(value, shown.result)


def _explain_planned(value: Any, plan: Planned) -> None:
    if not isinstance(value, str):
        raise TypeError(f"explain must be a string, got {type(value).__name__} {value!r}")


def _view(value: Any, shown: Shown) -> str:
    return check_view(value, shown.result)


def _view_planned(value: Any, plan: Planned) -> None:
    check_choice("view", value, VIEWS)
    if value == "components" and not plan.decompose:
        raise ValueError(
            "view='components' needs the direct logit attribution: pass decompose=True"
        )


# ------------------------------------------------------------------------------------------------
# The table. Its order is the order of the checks: `lens` first, since the others read the lens
# shown. Each line's front-end side is named in js/src/heatmap/view/view_state.js.

VIEW_TRAITS: tuple[ViewTrait, ...] = (
    ViewTrait(
        "lens",
        traitlets.Unicode,
        None,
        _lens,
        _lens_planned,
        old_names=("lens_name",),
        argument="lens_name",
    ),
    ViewTrait("lens_beside", traitlets.Unicode, "", _lens_beside, _lens_beside_planned),
    ViewTrait("prompt", traitlets.Int, 0, _prompt, _prompt_planned),
    ViewTrait("layer", traitlets.Int, None, _layer, _layer_planned),
    ViewTrait("metric", traitlets.Unicode, "prob", _metric, _metric_planned),
    ViewTrait("target", traitlets.Unicode, None, _target, _target_planned),
    ViewTrait("group", traitlets.Unicode, None, _group, _group_planned),
    ViewTrait("hide_template", traitlets.Bool, False, _hide_template, _hide_template_planned),
    ViewTrait("explain", traitlets.Unicode, EXPLAIN_TOP1, _explain, _explain_planned),
    ViewTrait("view", traitlets.Unicode, VIEWS[0], _view, _view_planned),
    ViewTrait("position", traitlets.Int, 0, _position, _position_planned),
)


class ViewOptions(TypedDict, total=False):
    """The view traits as keywords, for type checkers and IDEs (the constructor's
    ``**view``); ``tests/test_house.py`` holds its keys equal to :data:`VIEW_TRAITS`'s names
    and old names."""

    lens: str | None
    lens_name: str | None
    lens_beside: str
    prompt: int
    layer: int | None
    metric: str
    target: str | None
    group: str | None
    hide_template: bool
    explain: str
    view: str
    position: int


# ------------------------------------------------------------------------------------------------
# What comes from the table


def trait_namespace(
    traits: Iterable[ViewTrait] = VIEW_TRAITS,
    shown: str = "_view_shown",
) -> dict[str, Any]:
    """The class attributes of a widget with these view traits: each synced trait, its
    validator (the line's check, against what the widget's method ``shown`` returns: a
    :class:`Shown`), a property for each old name, and the table itself as ``_view_traits``
    (what :func:`initial_view` and :func:`view_of` read).

    A widget's class body takes them with ``locals().update(trait_namespace())``.
    """
    traits = tuple(traits)
    namespace: dict[str, Any] = {"_view_traits": traits}
    for line in traits:
        namespace[line.name] = line.trait()
        namespace[f"_check_{line.name}"] = _validator(line, shown)
        for old in line.old_names:
            namespace[old] = _old_name(old, line, shown)
    return namespace


def _validator(line: ViewTrait, shown: str) -> Any:
    def check(widget: Any, proposal: dict[str, Any]) -> Any:
        return line.check(proposal["value"], getattr(widget, shown)())

    check.__name__ = f"_check_{line.name}"
    return traitlets.validate(line.name)(check)


def _old_name(old: str, line: ViewTrait, shown: str) -> property:
    def get(widget: Any) -> Any:
        return getattr(widget, line.name)

    def put(widget: Any, value: Any) -> None:
        setattr(widget, line.name, _renamed(old, line, value, getattr(widget, shown)()))

    return property(get, put, doc=f"The old name of ``{line.name}`` (still taken).")


def _renamed(old: str, line: ViewTrait, value: Any, shown: Shown) -> Any:
    """``value`` checked under the name it was given by (``lens_name``), so that the error
    names it."""
    try:
        return line.check(value, shown)
    except WidgetValueError as error:
        raise WidgetValueError(str(error).replace(line.name, old, 1)) from None


def initial_view(
    owner: str,
    given: Mapping[str, Any],
    results: LensResults,
    payload: LensPayload,
    other_keywords: Iterable[str] = (),
    traits: tuple[ViewTrait, ...] = VIEW_TRAITS,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A widget constructor's view keywords, checked in table order (defaults filled in), and
    the other keywords it takes.

    Args:
        owner: The class, for the error (``"LogitLensWidget"``).
        given: The keywords the constructor got beyond its own.
        results: Every lens's result.
        payload: Their payload.
        other_keywords: The other traits the constructor passes on (``selected``, ``layout``).
        traits: The table (the widget's ``_view_traits``).

    Returns:
        The view's values by trait name, and the other keywords.

    Raises:
        TypeError: For a keyword that is neither a view trait, an old name of one, nor one of
            ``other_keywords`` (naming the closest), or for one trait given by two names.
        WidgetValueError: For a value a check refuses, naming the trait.
    """
    others = set(other_keywords)
    by_name = {line.name: line for line in traits}
    old_names = {old: line.name for line in traits for old in line.old_names}
    values: dict[str, Any] = {}
    passed: dict[str, Any] = {}
    named: dict[str, str] = {}
    for key, value in given.items():
        name = old_names.get(key, key)
        if name in by_name:
            if name in named:
                raise TypeError(
                    f"{owner}() got {name!r} twice, as {named[name]}= and {key}=: give one"
                )
            named[name] = key
            values[name] = value
        elif key in others:
            passed[key] = value
        else:
            raise TypeError(_unknown(owner, key, [*by_name, *sorted(others)]))
    for line in traits:
        value = values.get(line.name, line.default)
        shown = Shown(results, payload, values.get("lens") or results.names[0])
        key = named.get(line.name, line.name)
        values[line.name] = (
            line.check(value, shown) if key == line.name else _renamed(key, line, value, shown)
        )
    return values, passed


def _unknown(owner: str, key: str, allowed: list[str]) -> str:
    public = [name for name in allowed if not name.startswith("_")]
    close = difflib.get_close_matches(key, public, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{owner}() got an unexpected keyword argument {key!r}{hint}; it takes {public}"


def check_planned(plan: Planned, traits: tuple[ViewTrait, ...] = VIEW_TRAITS) -> None:
    """Every view value given to :func:`show_logit_lens`, checked before the model runs, in
    table order (``plan.chosen``, by trait name; a value left out is the table's default).

    Raises:
        ValueError, TypeError: Naming the argument, what was given and what is allowed.
    """
    for line in traits:
        line.planned(plan.chosen.get(line.name, line.default), plan)


def view_of(widget: Any) -> dict[str, Any]:
    """The widget's view values by trait name (the state an exported page starts from)."""
    return {line.name: getattr(widget, line.name) for line in widget._view_traits}
