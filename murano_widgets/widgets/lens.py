"""``LogitLensWidget``: the interactive heatmap.

The class is thin: typed traits, their validation (the checks are pure functions in
:mod:`~murano_widgets.widgets.lens_checks`) and the live actions, which the
:class:`~murano_widgets.live.LiveSession` runs. The result is turned into the binary payload by
:mod:`murano_widgets.payload.lens`, cells are described by the result itself, and the metrics
come from the registry in :mod:`murano_widgets.metrics`. The one-call entry,
``show_logit_lens``, is in :mod:`~murano_widgets.widgets.show`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import traitlets

from murano_widgets._adapters import as_lens_result
from murano_widgets._checks import check_index, check_model
from murano_widgets.backends.base import ModelBackend
from murano_widgets.chat import check_hide_template
from murano_widgets.comparison.patching import PatchComparison
from murano_widgets.export import base64_sections
from murano_widgets.live.controller import LiveController, handle_message, not_live_error
from murano_widgets.live.session import LiveSession
from murano_widgets.metrics import METRICS, TARGET_METRIC
from murano_widgets.payload.attribution import EXPLAIN_TOP1, explain_choices, has_attribution
from murano_widgets.payload.lens import LensPayload
from murano_widgets.results import LensResults, LogitLensResult, as_given, lenses_of
from murano_widgets.widgets.base import MuranoWidget, WidgetValueError, asset, selected_cell
from murano_widgets.widgets.lens_checks import (
    VIEWS,
    check_explain,
    check_group,
    check_lens_beside,
    check_lens_name,
    check_live,
    check_metric,
    check_shown_layer,
    check_target,
    check_view,
    describe_selection,
    kept_target,
)
from murano_widgets.widgets.topk_window import answer_topk_window

__all__ = ["METRICS", "VIEWS", "LogitLensWidget", "WidgetValueError"]

#: ``live_status`` when nothing runs.
_IDLE = {"state": "idle", "request": -1, "action": "", "message": ""}


class LogitLensWidget(MuranoWidget):
    """The logit lens as an interactive heatmap: rows are layers, columns token positions.

    Display it as any Jupyter widget: make it the last expression of a cell (or call
    ``IPython.display.display(widget)``).

    Args:
        result: A :class:`LogitLensResult`, or a result of the released ``murano`` library
            (it has ``layer_indices`` and ``all_probs``; the reduced fields are computed here),
            or several lenses side by side, a :class:`~murano_widgets.LensResults`
            (``LogitLens(model, lens={"logit": None, "tuned": tuned})``): a lens menu then
            switches between them, and the trajectory chart draws the answer (or the final
            prediction) under every lens at once.
        prompt: The prompt shown first.
        layer: The model layer highlighted first (one of the result's layers; default the
            highest).
        metric: The colouring, one of :data:`~murano_widgets.metrics.METRICS` (``"target"``: a
            tracked token's probability, the token ``target``).
        target: The tracked token the ``"target"`` metric shows, one of the result's
            ``targets`` (default the first).
        group: The token group the ``"group"`` metric shows, one of the result's
            ``group_names`` (default the first).
        model: Only for ``murano`` results: the model that made it (its tokenizer decodes the
            top-k tokens, its depth says whether the result holds the model's final layer).
        tokenizer: Only for ``murano`` results, instead of ``model``: decodes top-k tokens.
        n_model_layers: Only for ``murano`` results, instead of ``model``: the model's depth.
            Without it, metrics measured against the final prediction are not offered.
        hide_template: Hide the chat template's own tokens at first (only for chats, whose
            result has tokens of the ``"template"`` role).
        lens_name: The lens shown first, by name (default the first); one lens is named by
            its kind (``"logit"``, ``"tuned"``).
        lens_beside: With several lenses: another lens drawn as a second grid under the
            first, with one cursor (default ``""``: one grid).
        explain: What the "why" panel and the component view explain (results of
            ``decompose=True``): ``"top1"`` (each cell's top-1 token), ``"answer"`` (the
            answer's first token as the cell's next token, minus the foil's with foils) or
            ``"target:"`` and a target (a target's text alone is taken too).
        view: ``"layers"`` (the heatmap) or ``"components"`` (rows are the model's
            components, each one's direct part of the explained logit at every position, read
            at the highlighted row; results of ``decompose=True``).
        live: A :class:`~murano_widgets.live.LiveSession` that made ``result``
            (``session.run(prompts)``): the widget can then run the model, for the front end's
            text box, token tracking and patching and for :meth:`add_prompt`, :meth:`track`,
            :meth:`patch`, ... (``show_logit_lens(model, ...)`` passes one). ``None`` or
            ``False``: the widget shows the result alone (``live`` is ``False``).

    Attributes:
        lens_name: The name of the lens shown (synced with the lens menu; one of
            :attr:`lens_names`).
        lens_beside: The lens drawn as a second grid under the first (synced with the
            "beside" menu): another of :attr:`lens_names`, or ``""`` for one grid. Both grids
            show the same prompt, highlighted row (the layer slider moves both), colouring on
            one shared colour scale, and one cursor: hovering, focusing or pinning a cell in
            either marks the same cell in both. Setting ``lens_name`` to the lens beside swaps
            the two.
        prompt: The index of the shown prompt (synced with the prompt slider).
        layer: The highlighted model layer (the layer slider).
        metric: The colouring (the colour menu).
        target: The tracked token (one of :attr:`targets`) whose probability the ``"target"``
            metric shows (the token menu beside the colour menu); ``""`` when none is tracked.
            Tracking a token (:meth:`track`) shows it; untracking it shows the token that
            takes its place in :attr:`targets`.
        group: The token group (one of the result's ``group_names``) whose probability the
            ``"group"`` metric shows (the group menu beside the colour menu); ``""`` without
            groups.
        selected: The pinned cell, or ``None``: a dict with ``prompt``, ``layer_index`` (the
            row), ``layer`` (the model layer), ``address`` (the row's, ``"L3.resid_mid"``, with
            rows after each attention), ``position`` (among the prompt's real tokens),
            ``sequence_index`` (into the result's padded tensors), ``input_token``,
            ``predicted_token``, ``probability``, ``top_k`` (token, probability) pairs and the
            per-cell fields (see :meth:`LogitLensResult.describe_cell`; rank 0 is the top-1),
            under the lens shown (switching lenses describes the same cell again), and with
            several lenses ``lens``, that lens's name.
        hide_template: Whether the chat template's own tokens are hidden (synced with the "hide
            chat-template tokens" box; ``True`` is refused for a result without such tokens).
        position: The first position the grid shows (among the prompt's real tokens): setting
            it scrolls the grid there (as far as the prompt's end allows); scrolling the grid,
            dragging the long-trace overview or finding a token sets it (throttled).
        explain: What the "why" panel and the component view explain (synced with the panel's
            menu): ``"top1"``, ``"answer"`` or ``"target:<text>"``. Switching to a lens that
            cannot explain it sets it to ``"top1"``.
        view: ``"layers"`` or ``"components"`` (synced with the view menu); switching to a lens
            without the attribution sets it to ``"layers"``.
        live: Whether the widget holds a model it can run (read-only).
        prompts: The prompts shown, in slider order (``result.prompts``: for chats and
            generation, the text the model read). Changed by :meth:`add_prompt` and
            :meth:`remove_prompt` (and the front end's requests), never set directly.
        targets: The tracked tokens' texts (``result.targets``), changed by :meth:`track` and
            :meth:`untrack`.
        live_status: ``{"state": "idle" | "running" | "error", "request", "action",
            "message"}``: what the kernel is doing for the widget (``request`` is the front
            end's id, -1 for a Python call; ``message`` the error's one line).
        patch_info: The patch shown, or ``None`` (synced to the front end as ``patch``): its
            ``prompt``, ``layer``, ``position`` (among the prompt's real tokens), ``source``
            (``"zero"``, ``"mean"`` or a prompt index), ``answer`` and the answer's
            probability before and after, ``answer_prob_clean`` and ``answer_prob_patched``,
            and with a token tracked, ``target`` (the tracked token the change follows) and
            its probability as the next token after the prompt before and after,
            ``target_prob_clean`` and ``target_prob_patched`` (the model's own output; ``None``
            for those without answers, or without a tracked token).

    With direct logit attribution (``decompose=True``) the widget adds a "why" panel under the
    heatmap: for the hovered, focused or pinned cell, the components that wrote most of the
    explained logit (top 8 by size, in model order), the rest summed as "other", and the bias,
    as signed bars that sum to the logit (before the soft-cap, where the model has one); with
    heads, a box splits each layer's attention into its heads. The view menu switches to the
    component view.

    Live (``show_logit_lens(model, ...)``): the front end asks the kernel for more through
    messages (the README's "Live" section), and Python asks the same with :meth:`add_prompt`,
    :meth:`remove_prompt`, :meth:`track`, :meth:`untrack`, :meth:`patch` and
    :meth:`clear_patch`, which run at once and raise their errors; :attr:`result` always holds
    what is shown. The work runs on a worker thread of the widget's (see
    :mod:`murano_widgets.live`); a saved notebook or an exported page shows the state and says
    that editing needs a kernel.
    """

    _esm = asset("logit_lens.js")
    _css = asset("logit_lens.css")
    _export_what = "logit-lens widget"

    prompt = traitlets.Int(0).tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    metric = traitlets.Unicode("prob").tag(sync=True)
    target = traitlets.Unicode("").tag(sync=True)
    group = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
    hide_template = traitlets.Bool(False).tag(sync=True)
    position = traitlets.Int(0).tag(sync=True)
    lens_name = traitlets.Unicode("").tag(sync=True)
    lens_beside = traitlets.Unicode("").tag(sync=True)
    explain = traitlets.Unicode(EXPLAIN_TOP1).tag(sync=True)
    view = traitlets.Unicode(VIEWS[0]).tag(sync=True)
    _details = traitlets.Bool(False).tag(sync=True)
    _meta = traitlets.Dict().tag(sync=True)
    _sections = traitlets.Dict().tag(sync=True)
    live = traitlets.Bool(False, read_only=True).tag(sync=True)
    prompts = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    targets = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    live_status = traitlets.Dict(default_value=_IDLE).tag(sync=True)
    # Synced as "patch" (get_state below): the Python name "patch" is the method.
    patch_info = traitlets.Dict(default_value=None, allow_none=True).tag(sync=True)
    _patch_meta = traitlets.Dict().tag(sync=True)
    _patch_sections = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        result: Any,
        *,
        prompt: int = 0,
        layer: int | None = None,
        metric: str = "prob",
        target: str | None = None,
        group: str | None = None,
        model: ModelBackend | None = None,
        tokenizer: Any = None,
        n_model_layers: int | None = None,
        hide_template: bool = False,
        lens_name: str | None = None,
        lens_beside: str = "",
        explain: str = EXPLAIN_TOP1,
        view: str = VIEWS[0],
        live: Any = None,
        **kwargs: Any,
    ) -> None:
        session = check_live(live)
        if session is not None:
            result = session.check_result(result)
        if model is not None:
            check_model(model)
            tokenizer = tokenizer if tokenizer is not None else model.tokenizer
            n_model_layers = n_model_layers if n_model_layers is not None else model.n_layers
        results = lenses_of(
            result,
            adapt=lambda one: as_lens_result(
                one, tokenizer=tokenizer, n_model_layers=n_model_layers
            ),
        ).validate()
        first = results.first
        payload = LensPayload.from_result(as_given(results))
        # Everything is checked before the widget exists: a widget that fails half-built would
        # stay registered with the kernel.
        prompt = check_index("prompt", prompt, first.n_inputs, "prompts")
        layer = first.layers[-1] if layer is None else check_shown_layer(layer, first.layers)
        if target is None:
            target = first.targets[0] if first.targets else ""
        target = check_target(target, first.targets)
        if group is None:
            group = first.group_names[0] if first.group_names else ""
        group = check_group(group, first.group_names)
        metric = check_metric(metric, payload)
        hide_template = check_hide_template(hide_template, first.token_roles, WidgetValueError)
        lens_name = results.names[0] if lens_name is None else check_lens_name(lens_name, results)
        lens_beside = check_lens_beside(lens_beside, results.names, lens_name)
        explain = check_explain(explain, results[lens_name])
        view = check_view(view, results[lens_name])
        self._results = results
        self._payload = payload
        self._patched: PatchComparison | None = None
        self._live = None
        # Read-only for users, set before the comm opens, so its first state holds them.
        self.set_trait("live", session is not None)
        self.set_trait("prompts", list(first.prompts or payload.meta["prompts"]))
        self.set_trait("targets", list(first.targets or []))
        super().__init__(
            _meta=payload.meta,
            _sections=payload.base_sections(),
            prompt=prompt,
            layer=layer,
            target=target,
            group=group,
            metric=metric,
            hide_template=hide_template,
            lens_name=lens_name,
            lens_beside=lens_beside,
            explain=explain,
            view=view,
            **kwargs,
        )
        if session is not None:
            self._live = LiveController(self, session)
        self.on_msg(self._on_message)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        # A long payload's top-k by blocks (answered here, at once); the live actions.
        if not answer_topk_window(self, content):
            handle_message(self, self._live, content)

    @property
    def _result(self) -> LogitLensResult:
        return self._results[self.lens_name or self._results.names[0]]

    @property
    def result(self) -> LogitLensResult:
        """The result of the lens shown (converted, for a ``murano`` result)."""
        return self._result

    @property
    def results(self) -> LensResults:
        """Every lens's result, by name (one lens: one entry, named by its kind)."""
        return self._results

    @property
    def lens_names(self) -> list[str]:
        """The lenses the widget holds, in menu order."""
        return self._results.names

    @property
    def payload(self) -> LensPayload:
        """The result as the front end receives it (metadata and binary sections)."""
        return self._payload

    @property
    def session(self) -> LiveSession | None:
        """What the widget runs with (``None`` when it is not live)."""
        return None if self._live is None else self._live.session

    @property
    def patched(self) -> PatchComparison | None:
        """The patch shown (:meth:`patch`), as a :class:`~murano_widgets.PatchComparison`:
        ``a`` the clean lens of the patched prompt, ``b`` the patched one; ``None`` without
        one."""
        return self._patched

    # -----------------------------------------------------------------------------------------
    # Live: what the front end's text box, token tracking and patching do, from Python

    def add_prompt(self, text: str | list[dict[str, str]]) -> int:
        """Runs the lens on one more prompt, appends it and shows it.

        Only the new prompt runs (with the widget's model, layers, lenses, targets and
        options); the others keep their numbers. With ``chat=``, ``text`` is one user
        message of a new chat (or, from Python, a whole chat: a list of ``{"role",
        "content"}`` messages); with ``generate=``, the model continues it as it did the
        others. The new prompt has no answer.

        Returns:
            The new prompt's index (``prompt`` is set to it).

        Raises:
            RuntimeError: If the widget is not live.
            TypeError, ValueError: For an empty or non-string ``text``, before any model work.
        """
        return self._live_call("add_prompt", text=text)

    def remove_prompt(self, index: int) -> None:
        """Removes prompt ``index`` (no model work: the others keep their numbers).

        Raises:
            RuntimeError: If the widget is not live.
            ValueError: For an index out of range, or the last prompt.
        """
        self._live_call("remove_prompt", index=index)

    def track(self, text: str, show: bool = True) -> None:
        """Tracks ``text`` as a target at every cell: every prompt runs again, since targets
        are reduced inside the step. Tracking a tracked text runs nothing. ``text`` must be one
        token after the first prompt (as the step tokenizes targets): a text of several tokens
        is refused, naming its tokens (``"Tokyo"`` is ``'T' + 'okyo'``; ``" Tokyo"`` is one).

        Args:
            text: The token's text, spaces included (``" Paris"`` is not ``"Paris"``).
            show: Colour the heatmap by its probability: ``target`` becomes ``text`` and
                ``metric`` ``"target"`` (also for a text tracked already). ``False`` leaves
                the colouring as it is.

        Raises:
            RuntimeError: If the widget is not live.
            TypeError, ValueError: For a non-string or empty ``text``, a text that is not one
                token, or a ``show`` that is not a bool, before any model work.
        """
        self._live_call("track", text=text, show=show)

    def track_word(self, word: str) -> None:
        """Tracks ``word`` as a token group, as the widget's "Track a word" box does: the
        group :meth:`TokenGroup.word(tokenizer, word) <murano_widgets.TokenGroup.word>` (every
        token that is a prefix of the word, with and without its leading space), named by the
        word; every prompt runs again with it, and the heatmap shows its probability
        (``metric`` ``"group"``, ``group`` the word).

        Raises:
            RuntimeError: If the widget is not live.
            ValueError: For an empty word, or one no token of the vocabulary starts, before
                any model work.
        """
        self._live_call("group", text=word)

    def untrack(self, text: str) -> None:
        """Stops tracking ``text`` (every prompt runs again without it).

        Raises:
            RuntimeError: If the widget is not live.
            ValueError: If ``text`` is not tracked.
        """
        self._live_call("untrack", text=text)

    def patch(
        self, *, layer: int, position: int, source: str | int, prompt: int | None = None
    ) -> PatchComparison:
        """Patches one cell of a prompt and shows the patched lens as a difference from the
        clean one (:func:`~murano_widgets.patch_lens`, read through the lens shown), with the
        heatmap on the prompt patched (``prompt`` is set to it). With a token tracked, the
        change in probability follows it (``target``, the token menu's), else the clean run's
        own prediction.

        Args:
            layer: The block whose output is replaced: one of the result's layers.
            position: The position among the prompt's real tokens (as ``selected``'s;
                negative ones count from the end).
            source: ``"zero"``, ``"mean"`` (the block output's mean over every real position
                of every prompt shown) or a prompt index (that prompt's block output at the
                same layer and position).
            prompt: The prompt patched (default: the one shown).

        Returns:
            The comparison (also :attr:`patched`); ``patch_info`` holds the answer's
            probability before and after, and the tracked token's.

        Raises:
            RuntimeError: If the widget is not live.
            TypeError, ValueError: For a bad argument, naming it, before any model work.
        """
        return self._live_call(
            "patch",
            prompt=self.prompt if prompt is None else prompt,
            layer=layer,
            position=position,
            source=source,
        )

    def describe_patchscope(self, *, layer: int, position: int, prompt: int | None = None) -> str:
        """The cell described in a few words by the Patchscope shown (what the front end's
        "Describe this cell" shows): :meth:`PatchscopeLens.describe` of block ``layer``'s
        output at ``position`` of the prompt (default: the one shown), greedy, a set length
        (:data:`murano_widgets.live.describe.DESCRIBE_TOKENS` tokens).

        Raises:
            RuntimeError: If the widget is not live.
            ValueError: If the lens shown is not a Patchscope, or for a bad argument.
        """
        return self._live_call(
            "describe_patchscope",
            prompt=self.prompt if prompt is None else prompt,
            layer=layer,
            position=position,
        )

    def clear_patch(self) -> None:
        """Removes the patch shown (``patch_info`` becomes ``None``)."""
        if self._live is None:
            self._live_show_patch(None, None, {}, {})
            return
        self._live_call("clear_patch")

    def close(self) -> None:
        """Closes the widget, and its worker with it."""
        if getattr(self, "_live", None) is not None:
            self._live.close()
        super().close()

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """The synced state, with ``patch_info`` under the name the front end reads, ``patch``
        (the widget's ``patch`` is the method)."""
        state = super().get_state(key=key, drop_defaults=drop_defaults)
        if "patch_info" in state:
            state["patch"] = state.pop("patch_info")
        return state

    def _live_call(self, action: str, **fields: Any) -> Any:
        if self._live is None:
            raise not_live_error(f"{action}()")
        return self._live.call(action, **fields)

    def _live_results(self) -> LogitLensResult | LensResults:
        """What is shown, as the session's kind of result."""
        return as_given(self._results)

    def _live_prepare(
        self, result: LogitLensResult | LensResults
    ) -> tuple[LensResults, LensPayload]:
        """New results and their payload, made before any trait changes (off the kernel's
        thread, for a front-end request)."""
        return lenses_of(result).validate(), LensPayload.from_result(result)

    def _live_show(
        self,
        shown: tuple[LensResults, LensPayload],
        *,
        prompt: int,
        selected: dict[str, Any] | None,
        patch: dict[str, Any] | None,
        target: str | None = None,
    ) -> None:
        """Shows new results: one state message for everything that changed (the payload
        first, then the prompts and targets, as the protocol says). ``target``: a tracked
        token to show (``target`` and ``metric`` switch to it)."""
        results, payload = shown
        with self.hold_sync():
            self._results, self._payload = results, payload
            self._meta = payload.meta
            self._sections = payload.all_sections() if self._details else payload.base_sections()
            self.prompt = prompt
            result = self._result
            if self.explain not in explain_choices(result):
                self.explain = EXPLAIN_TOP1
            if self.group not in (result.group_names or [""]):
                self.group = (result.group_names or [""])[0]
            if target is None:
                self.target = kept_target(self.target, self.targets, result)
            else:
                self._live_show_target(target)
            if not payload.metric(self.metric)["available"]:
                self.metric = METRICS["prob"].name
            self.selected = selected and {
                key: selected[key] for key in ("prompt", "layer_index", "position")
            }
            self.set_trait("prompts", list(result.prompts or payload.meta["prompts"]))
            self.set_trait("targets", list(result.targets or []))
            if patch is None:
                self._live_show_patch(None, None, {}, {})
            else:
                self.patch_info = patch

    def _live_show_target(self, text: str) -> None:
        """Colours the heatmap by tracked token ``text``'s probability (one state message)."""
        with self.hold_sync():
            self.target = text
            self.metric = TARGET_METRIC

    def _live_show_patch(
        self,
        comparison: PatchComparison | None,
        state: dict[str, Any] | None,
        meta: dict[str, Any],
        sections: dict[str, bytes],
    ) -> None:
        with self.hold_sync():
            self._patched = comparison
            self._patch_meta = meta
            self._patch_sections = sections
            self.patch_info = state

    @traitlets.validate("prompt")
    def _check_prompt(self, proposal: dict[str, Any]) -> int:
        return check_index(
            "prompt", proposal["value"], self._result.n_inputs, "prompts", WidgetValueError
        )

    @traitlets.validate("position")
    def _check_position(self, proposal: dict[str, Any]) -> int:
        longest = max(self._result.lengths, default=1)
        return check_index(
            "position", proposal["value"], longest, "positions at most", WidgetValueError
        )

    @traitlets.validate("layer")
    def _validate_layer(self, proposal: dict[str, Any]) -> int:
        return check_shown_layer(proposal["value"], self._result.layers)

    @traitlets.validate("metric")
    def _validate_metric(self, proposal: dict[str, Any]) -> str:
        return check_metric(proposal["value"], self._payload)

    @traitlets.validate("target")
    def _validate_target(self, proposal: dict[str, Any]) -> str:
        return check_target(proposal["value"], self._result.targets)

    @traitlets.validate("group")
    def _validate_group(self, proposal: dict[str, Any]) -> str:
        return check_group(proposal["value"], self._result.group_names)

    @traitlets.validate("hide_template")
    def _validate_hide_template(self, proposal: dict[str, Any]) -> bool:
        return check_hide_template(proposal["value"], self._result.token_roles, WidgetValueError)

    @traitlets.validate("lens_name")
    def _validate_lens_name(self, proposal: dict[str, Any]) -> str:
        return check_lens_name(proposal["value"], self._results, WidgetValueError)

    @traitlets.validate("lens_beside")
    def _validate_lens_beside(self, proposal: dict[str, Any]) -> str:
        return check_lens_beside(proposal["value"], self._results.names, self.lens_name)

    @traitlets.validate("explain")
    def _validate_explain(self, proposal: dict[str, Any]) -> str:
        return check_explain(proposal["value"], self._result)

    @traitlets.validate("view")
    def _validate_view(self, proposal: dict[str, Any]) -> str:
        return check_view(proposal["value"], self._result)

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict[str, Any]) -> dict[str, Any] | None:
        value = proposal["value"]
        if value is None:
            return None
        described = describe_selection(self._result, value, default_prompt=self.prompt)
        if len(self._results) > 1:
            described["lens"] = self.lens_name
        return described

    @traitlets.observe("lens_name")
    def _on_lens_name(self, change: dict[str, Any]) -> None:
        # Showing the lens drawn beside swaps the two grids (the front end's menu does the same).
        if self.lens_beside and self.lens_beside == change["new"]:
            self.lens_beside = change["old"]
        # The pinned cell stays where it is; what it holds is the new lens's.
        if self.selected:
            self.selected = dict(self.selected)
        # What the new lens cannot show falls back as the page falls back (to the top-1, to the
        # heatmap), here, so that explain and view always name what is shown: whoever switched
        # (the menu or Python), with no page showing the widget, and with several.
        result = self._result
        if self.explain not in explain_choices(result):
            self.explain = EXPLAIN_TOP1
        if self.view != VIEWS[0] and not has_attribution(result):
            self.view = VIEWS[0]

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

    def _standalone_state(self) -> dict[str, Any]:
        return {
            "_meta": self._payload.meta,
            "_sections": base64_sections(self._payload.every_section()),
            "_details": True,
            "prompt": self.prompt,
            "layer": self.layer,
            "metric": self.metric,
            "target": self.target,
            "group": self.group,
            "selected": selected_cell(self.selected),
            "hide_template": self.hide_template,
            "position": self.position,
            "lens_name": self.lens_name,
            "lens_beside": self.lens_beside,
            "explain": self.explain,
            "view": self.view,
            # The live state, for the page to show (and to say that editing needs a kernel).
            "live": self.live,
            "prompts": list(self.prompts),
            "targets": list(self.targets),
            "patch": self.patch_info,
            "_patch_meta": self._patch_meta,
            "_patch_sections": base64_sections(self._patch_sections),
        }

    def _default_title(self) -> str:
        name = self._payload.meta.get("model_name") or "model"
        titles = " · ".join(lens["title"] for lens in self._payload.meta["lenses"])
        return f"{titles} — {Path(name).name or name}"

    def __repr__(self) -> str:
        result = self._result
        lenses = (
            f", lens_name={self.lens_name!r} of {self.lens_names}" if len(self._results) > 1 else ""
        )
        return (
            f"LogitLensWidget({result.n_inputs} prompts, layers {result.layers[0]}..{result.layers[-1]}, "
            f"prompt={self.prompt}, layer={self.layer}, metric={self.metric!r}{lenses})"
        )
