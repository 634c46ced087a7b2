"""The live widget's side of the protocol: its actions, the front end's messages, the replies
and ``live_status`` (the protocol: the README's "Live" section).

Every action has one implementation here, :meth:`LiveController._plan`'s ``_<action>`` method:
it checks its fields and does the model work (through the :class:`~murano_widgets.live.LiveSession`),
then returns the function that applies the result to the widget. The front end's message runs
it on the worker thread (:class:`~murano_widgets.live.worker.Worker`); the widget's Python
method (``w.add_prompt(...)``) runs the same one synchronously with :meth:`LiveController.call`,
so a notebook re-run top to bottom gives the same widget.

**Adding an action:** write ``_<action>(self, **fields)`` below (checks first, then model work,
then ``return apply`` where ``apply()`` changes the widget and returns ``(reply message,
value for Python)``), list its required and optional fields in :data:`ACTIONS` and its running
line in :meth:`LiveController._describe`, give the widget a Python method that calls
``self._live_call(action, ...)``, and add its row to the protocol and the README.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from murano_widgets._checks import check_bool, check_str
from murano_widgets.live.patching import patch_payload, patch_state
from murano_widgets.live.worker import Request, Worker, one_line, status
from murano_widgets.tokens import quote_token

if TYPE_CHECKING:
    from murano_widgets.live.session import LiveSession

__all__ = ["ACTIONS", "LiveController", "handle_message", "not_live_error"]

_log = logging.getLogger("murano_widgets.live")

#: The front end's actions (beyond ``hello``, answered at once): required fields, optional ones.
ACTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add_prompt": (("text",), ()),
    "remove_prompt": (("index",), ()),
    "track": (("text",), ("show",)),
    "untrack": (("text",), ()),
    "patch": (("prompt", "layer", "position", "source"), ()),
    "clear_patch": ((), ()),
    "describe_patchscope": (("prompt", "layer", "position"), ()),
    "group": (("text",), ()),
}

Apply = Callable[[], tuple[str, Any]]


def not_live_error(what: str) -> RuntimeError:
    """The error of a widget without a model asked to run it."""
    return RuntimeError(
        f"{what} needs a model, and this widget was made from a result alone (live=False): "
        "make it with show_logit_lens(model, ...), or pass a session, "
        "LogitLensWidget(session.run(prompts), live=LiveSession(model, ...))"
    )


class LiveController:
    """The actions of one live widget, its worker and its replies.

    Args:
        widget: The :class:`~murano_widgets.LogitLensWidget` (its ``_live_*`` methods show
            results and patches; its ``send`` replies; its ``live_status`` is kept current).
        session: What it runs with.
    """

    def __init__(self, widget: Any, session: LiveSession) -> None:
        self.widget = widget
        self.session = session
        self.worker = Worker(self._report, name=f"murano-live-{id(widget):x}")

    # -----------------------------------------------------------------------------------------
    # Entry points

    def submit(self, request_id: int, action: str, fields: dict[str, Any]) -> None:
        """Queues a front-end request (see :class:`~murano_widgets.live.worker.Worker`)."""

        def run() -> Callable[[], str]:
            apply = self._plan(action, fields)()
            return lambda: apply()[0]

        self.worker.submit(Request(request_id, action, run, self._describe(action, fields)))

    def call(self, action: str, **fields: Any) -> Any:
        """A Python call: waits for the queued requests, then runs ``action`` here, holding
        the worker's lock, and returns its value; its exception is raised here (and shown in
        ``live_status``)."""
        self.worker.wait_idle()
        with self.worker.run_lock:
            self._set_status(status("running", -1, action, self._describe(action, fields)))
            try:
                _, value = self._plan(action, fields)()()
            except Exception as error:
                self._set_status(status("error", -1, action, one_line(error)))
                raise
            self._set_status(status("idle", -1, action))
            return value

    def close(self) -> None:
        """No more requests (the widget was closed)."""
        self.worker.close()

    # -----------------------------------------------------------------------------------------
    # The actions: checks and model work now, the widget changed by the function returned

    def _plan(self, action: str, fields: dict[str, Any]) -> Callable[[], Apply]:
        method = getattr(self, f"_{action}")
        return lambda: method(**fields)

    def _add_prompt(self, text: Any) -> Apply:
        widget = self.widget
        results = self.session.add(widget._live_results(), text)
        shown = widget._live_prepare(results)
        index = _n_inputs(results) - 1

        def apply() -> tuple[str, Any]:
            # A mean over the batch no longer means the batch shown: that patch goes.
            patch = self._kept_patch(lambda p: p, mean_changes=True)
            widget._live_show(shown, prompt=index, selected=widget.selected, patch=patch)
            return f"Added prompt {index}.", index

        return apply

    def _remove_prompt(self, index: Any) -> Apply:
        widget = self.widget
        results = self.session.remove(widget._live_results(), index)
        shown = widget._live_prepare(results)
        removed = int(index)
        n = _n_inputs(results)

        def moved(p: int) -> int | None:
            return None if p == removed else p - (p > removed)

        def apply() -> tuple[str, Any]:
            prompt = widget.prompt
            prompt = moved(prompt) if prompt != removed else min(removed, n - 1)
            selected = widget.selected
            if selected and "prompt" in selected:
                where = moved(int(selected["prompt"]))
                selected = None if where is None else {**selected, "prompt": where}
            patch = self._kept_patch(moved, mean_changes=True)
            widget._live_show(shown, prompt=prompt, selected=selected, patch=patch)
            return f"Removed prompt {removed}.", None

        return apply

    def _track(self, text: Any, show: Any = False) -> Apply:
        # ``show``: colour by the token's probability (``target`` and ``metric`` switch to it).
        text = _check_target(text)
        show = check_bool("show", show)
        widget = self.widget
        results = widget._live_results()
        targets = list(_targets(results))
        if text in targets:

            def again() -> tuple[str, Any]:
                if show:
                    widget._live_show_target(text)
                return f"{quote_token(text)} is tracked already.", None

            return again
        self.session.check_one_token(results, text)
        return self._retarget(
            results, [*targets, text], f"Tracking {quote_token(text)}.", show=text if show else None
        )

    def _untrack(self, text: Any) -> Apply:
        text = _check_target(text)
        results = self.widget._live_results()
        targets = list(_targets(results))
        if text not in targets:
            raise ValueError(f"text {text!r} is not tracked; the tracked targets are {targets}")
        return self._retarget(
            results, [t for t in targets if t != text], f"No longer tracking {quote_token(text)}."
        )

    def _group(self, text: Any) -> Apply:
        # A typed word as a token group (TokenGroup.word), shown at once (metric "group").
        from murano_widgets.live.groups import add_word_group, check_word

        word = check_word(text)
        widget = self.widget
        shown = widget._live_prepare(add_word_group(self.session, widget._live_results(), word))

        def apply() -> tuple[str, Any]:
            patch = self._kept_patch(lambda p: p, mean_changes=False)
            with widget.hold_sync():
                widget._live_show(
                    shown, prompt=widget.prompt, selected=widget.selected, patch=patch
                )
                widget.group = word
                widget.metric = "group"
            return f"Tracking the word {quote_token(word, spaces=False)} as a group.", None

        return apply

    def _retarget(
        self, results: Any, targets: list[str], message: str, show: str | None = None
    ) -> Apply:
        widget = self.widget
        shown = widget._live_prepare(self.session.retarget(results, targets))

        def apply() -> tuple[str, Any]:
            patch = self._kept_patch(lambda p: p, mean_changes=False)
            widget._live_show(
                shown, prompt=widget.prompt, selected=widget.selected, patch=patch, target=show
            )
            return message, None

        return apply

    def _patch(self, prompt: Any, layer: Any, position: Any, source: Any) -> Apply:
        widget = self.widget
        followed = _followed_target(widget)
        comparison = self.session.patch(
            widget._live_results(),
            prompt=prompt,
            layer=layer,
            position=position,
            source=source,
            lens_name=widget.lens_name,
            token=None if followed is None else followed[1],
        )
        state = patch_state(
            comparison,
            int(prompt),
            source if isinstance(source, str) else int(source),
            target=None if followed is None else followed[0],
        )
        meta, sections = patch_payload(comparison)

        def apply() -> tuple[str, Any]:
            # The heatmap shows the prompt patched, so that it and the diff under it are about
            # one prompt (a Python call may patch another prompt than the one shown).
            with widget.hold_sync():
                widget.prompt = state["prompt"]
                widget._live_show_patch(comparison, state, meta, sections)
            return comparison.patch.describe(), comparison  # type: ignore[union-attr]

        return apply

    def _describe_patchscope(self, prompt: Any, layer: Any, position: Any) -> Apply:
        from murano_widgets.live.describe import describe_patchscope

        text = describe_patchscope(self.widget, self.session, prompt, layer, position)
        # The reply's message is the text itself: the front end shows it in the pinned cell's
        # panel (as text).
        return lambda: (text, text)

    def _clear_patch(self) -> Apply:
        widget = self.widget

        def apply() -> tuple[str, Any]:
            widget._live_show_patch(None, None, {}, {})
            return "Patch cleared.", None

        return apply

    # -----------------------------------------------------------------------------------------
    # Pieces

    def _kept_patch(self, moved: Callable[[int], int | None], mean_changes: bool) -> Any:
        """What becomes of the patch shown when the prompts change: kept (its prompt indices
        moved), or ``None`` when a prompt it reads went, or its mean was over other prompts."""
        patch = self.widget.patch_info
        if not patch:
            return None
        if mean_changes and patch["source"] == "mean":
            return None
        prompt = moved(patch["prompt"])
        source = patch["source"]
        if isinstance(source, int):
            source = moved(source)
        if prompt is None or source is None:
            return None
        return {**patch, "prompt": prompt, "source": source}

    @staticmethod
    def _describe(action: str, fields: dict[str, Any]) -> str:
        """The status line while a request runs, worded as the front end's ``describeRequest``
        words it before this line arrives (js/src/live/protocol.js): one style for the whole
        run, a token quoted by ``quote_token``, prompts, layers and positions counted as Python
        indexes them (docs/contributing.md, "How the widget counts")."""
        text = fields.get("text")
        source = fields.get("source")
        with_what = (
            f"prompt {source}'s output"
            if isinstance(source, int) and not isinstance(source, bool)
            else {"zero": "zero", "mean": "the mean"}.get(str(source), quote_token(str(source)))
        )
        return {
            "add_prompt": f"Running the lens on {quote_token(str(text), spaces=False)}…",
            "remove_prompt": f"Removing prompt {fields.get('index')}…",
            "track": f"Tracking {quote_token(str(text))}…",
            "untrack": f"No longer tracking {quote_token(str(text))}…",
            "patch": (
                f"Patching prompt {fields.get('prompt')}: block {fields.get('layer')}'s output "
                f"at position {fields.get('position')}, with {with_what}…"
            ),
            "clear_patch": "Clearing the patch…",
            "describe_patchscope": (
                f"Describing prompt {fields.get('prompt')}: block {fields.get('layer')}'s output "
                f"at position {fields.get('position')}…"
            ),
            "group": f"Tracking the word {quote_token(str(text), spaces=False)} as a group…",
        }.get(action, "Working…")

    def _report(self, request: Request, outcome: str, message: str) -> None:
        widget = self.widget
        if outcome == "running":
            self._set_status(status("running", request.id, request.action, message))
        elif outcome == "idle":
            # An error stays shown until the next request runs.
            if widget.live_status.get("state") != "error":
                self._set_status(status("idle", request.id, request.action))
        else:
            if outcome == "error":
                self._set_status(status("error", request.id, request.action, message))
            reply(widget, outcome, request.id, message)

    def _set_status(self, value: dict[str, Any]) -> None:
        self.widget.live_status = value


def handle_message(widget: Any, controller: LiveController | None, content: Any) -> None:
    """A front-end message (``model.send(content)``): ``hello`` answered at once, on this
    thread; the other actions queued, or refused with an ``error`` reply."""
    if not isinstance(content, dict):
        _log.warning("live widget: a message that is not a dict was ignored: %.80r", content)
        return
    action = content.get("action")
    request_id = content.get("id")
    if action == "hello":
        widget.send({"action": "hello", "id": request_id, "live": bool(widget.live)})
        return
    problem: Exception
    valid_id = isinstance(request_id, int) and not isinstance(request_id, bool)
    if not valid_id:
        problem = ValueError(f"a request needs an int id, got {request_id!r:.40}")
    elif action not in ACTIONS:
        problem = ValueError(
            f"unknown action {action!r:.40}; the actions are {['hello', *ACTIONS]}"
        )
    elif controller is None:
        problem = not_live_error(str(action))
    else:
        required, optional = ACTIONS[action]
        missing = [name for name in required if name not in content]
        if missing:
            problem = ValueError(f"the {action} request lacks {missing}")
        else:
            fields = {name: content[name] for name in (*required, *optional) if name in content}
            try:
                controller.submit(request_id, action, fields)
                return
            except RuntimeError as error:  # the widget was closed
                problem = error
    _log.warning("live widget: request %r refused: %s", request_id, problem)
    line = one_line(problem)
    widget.live_status = status("error", request_id if valid_id else -1, str(action), line)
    reply(widget, "error", request_id, line)


def reply(widget: Any, outcome: str, request_id: Any, message: str) -> None:
    """The reply to a request: ``{"action": outcome, "id": id, "message": message}``."""
    widget.send({"action": outcome, "id": request_id, "message": message})


def _n_inputs(results: Any) -> int:
    return int(results.n_inputs)


def _targets(results: Any) -> list[str]:
    first = results.first if hasattr(results, "first") else results
    return list(first.targets or [])


def _followed_target(widget: Any) -> tuple[str, int] | None:
    """The tracked token a patch's change in probability follows, as ``(text, id)``: the
    widget's ``target`` (the token menu's) whenever a token is tracked, whatever the colouring;
    ``None`` (the clean run's own prediction) when none is."""
    if not widget.target:
        return None
    one = widget._live_results()
    one = one.first if hasattr(one, "first") else one
    targets = list(one.targets or [])
    if widget.target not in targets or one.target_token_ids is None:
        return None
    return widget.target, int(one.target_token_ids[targets.index(widget.target)][0])


def _check_target(text: Any) -> str:
    """A string to track (one space is a token too; the empty string is none)."""
    text = check_str("text", text, empty=True)
    if text == "":
        raise ValueError("text is the empty string: a target needs at least one token")
    return text  # type: ignore[return-value]
