"""``show_logit_lens``: the one-call entry, from a model and prompts to a live heatmap.

It checks the widget's own arguments before any model runs, makes the
:class:`~murano_widgets.live.LiveSession` that keeps the model and the run options, runs the
prompts once and hands the result to :class:`~murano_widgets.widgets.lens.LogitLensWidget`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from murano_widgets._checks import check_model
from murano_widgets.backends.base import ModelBackend
from murano_widgets.lenses import Lens, as_lens, named_lenses
from murano_widgets.live.session import LiveSession
from murano_widgets.options import PromptOptions
from murano_widgets.payload.attribution import EXPLAIN_TOP1
from murano_widgets.step.logit_lens import resolve_layers
from murano_widgets.widgets.lens import LogitLensWidget
from murano_widgets.widgets.lens_checks import VIEWS
from murano_widgets.widgets.view_state import VIEW_TRAITS, Planned, check_planned

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from murano_widgets.options import ShowOptions

__all__ = ["show_logit_lens"]

# Besides the widget's own arguments, show_logit_lens's options go to the session (run
# options) or to its first run (the prompts' own).
_PER_PROMPT = tuple(PromptOptions.__annotations__)


def show_logit_lens(
    model: ModelBackend,
    prompts: str | Sequence[str] | None = None,
    layers: Sequence[int] | str = "all",
    *,
    lens: Lens | Mapping[str, Lens | None] | None = None,
    prompt: int = 0,
    layer: int | None = None,
    metric: str = "prob",
    target: str | None = None,
    hide_template: bool = False,
    lens_name: str | None = None,
    lens_beside: str = "",
    explain: str = EXPLAIN_TOP1,
    view: str = VIEWS[0],
    **options: Unpack[ShowOptions],
) -> LogitLensWidget:
    """Runs the logit lens on ``prompts`` and returns it as a live interactive widget: the
    result of ``run_logit_lens(model, prompts, layers, lens=lens, **options)``, with the model
    and the options kept (``w.session``, a :class:`~murano_widgets.live.LiveSession`) so that
    the widget can run more: a prompt typed in its text box (``w.add_prompt(text)``), a token
    tracked (``w.track(text)``), a cell patched (``w.patch(...)``).

    The widget shows when it is the last expression of a notebook cell, like every Jupyter
    widget: ``show_logit_lens(model, prompts)``, or ``w = show_logit_lens(...)`` then ``w``.
    Every argument is checked before the model runs.

    Args:
        model: The model, e.g. ``MuranoModel("gpt2")`` or ``load_demo_model()``.
        prompts: One prompt or a list of prompts (or ``None`` with ``chat=``).
        layers: ``"all"`` or a list of layer indices.
        lens: The lens, a :class:`~murano_widgets.Lens` such as a
            :class:`~murano_widgets.TunedLens` or :class:`~murano_widgets.JacobianLens`
            (``None``: the logit lens), or several by name, ``{"logit": None, "tuned":
            tuned}``, shown side by side with a lens menu. The widget keeps it for what it runs
            later, as it keeps ``**options``.
        prompt: The prompt shown first (an index into ``prompts``).
        layer: The model layer highlighted first (default the highest shown).
        metric: The colouring, one of :data:`~murano_widgets.metrics.METRICS`; ``"target"``
            (a tracked token's probability) needs ``targets``.
        target: With ``targets``: the one the ``"target"`` metric shows first (default the
            first; the widget's ``target`` trait, and its token menu).
        hide_template: With ``chat``: hide the chat template's own tokens at first (the
            widget's ``hide_template`` trait, and its "hide chat-template tokens" box).
        lens_name: With named lenses (``lens={"logit": None, "tuned": tuned}``): the one shown
            first (default the first); the widget's lens menu switches between them.
        lens_beside: With named lenses: another one drawn as a second grid under the first,
            with one cursor (the widget's ``lens_beside`` trait and its "beside" menu; ``""``:
            one grid).
        explain: With ``decompose=True``: what the "why" panel explains first (``"top1"``,
            ``"answer"``, ``"target:<text>"``; the widget's ``explain`` trait).
        view: ``"layers"``, or with ``decompose=True`` ``"components"`` (the component view).
        **options: What :func:`~murano_widgets.run.run_logit_lens` takes, then the options of
            the :class:`~murano_widgets.LogitLens` step
            (:class:`~murano_widgets.options.ShowOptions`: typed, so a type checker and an IDE
            know each); the widget keeps them for what it
            runs later (a typed prompt, a tracked token, a patch). Each of them:

            - ``answers``: each prompt's expected answer (a string, a list of accepted
              strings, or ``None``; or a dict of named answer sets), scored at every layer,
              drawn in the trajectory chart and marked in the heatmap.
            - ``foils``: with ``decompose=True``: a wrong but plausible alternative to each
              answer, so that the answer's attribution is to answer − foil.
            - ``generate``: let the model write up to this many tokens after each prompt and
              show the lens over them too (``None``: no generation).
            - ``do_sample``: sample the generated tokens rather than take the most likely
              (greedy, the default).
            - ``temperature``: the sampling temperature (only with ``do_sample=True``).
            - ``top_p``: nucleus sampling's probability mass (only with ``do_sample=True``).
            - ``seed``: makes sampling reproducible (only with ``do_sample=True``).
            - ``generation``: the generation options above as one record, a
              :class:`~murano_widgets.Generation` (instead of them one by one).
            - ``chat``: a chat (a list of ``{"role", "content"}`` messages) or a list of
              chats instead of ``prompts``, read through the tokenizer's chat template, each
              token's role marked.
            - ``add_generation_prompt``: with ``chat``: end with the template's opening of an
              assistant turn (default ``True``).
            - ``store_full_probs``: keep every softmax output (``all_probs``,
              ``n_layers·n_inputs·seq·vocab`` floats): only for small, targeted runs.
            - ``top_k``: how many of the most likely tokens each cell keeps (default 5; the
              tooltip's list).
            - ``max_chunk_bytes``: the size of one chunk of float32 logits (default 256 MiB):
              the step's peak extra memory is about three times this, plus the saved block
              outputs.
            - ``remote``: run the trace on NDIF through nnsight's remote execution, reduced
              inside the trace (``MuranoModel(..., backend="nnsight")``).
            - ``reduce_in_trace``: reduce inside the trace, as ``remote=True`` does (default:
              ``remote``); locally it only costs memory.
            - ``targets``: strings whose probability and rank are tracked at every position
              (the ``"target"`` metric, the token menu, lines in the trajectory chart).
            - ``variants``: also count each answer's and target's forms with and without a
              leading space and with the first letter's case changed.
            - ``positions``: ``"all"`` (the heatmap) or ``"last"`` (only each prompt's last
              position holds values).
            - ``kl_between_lenses``: with named lenses: also KL in bits between every two of
              them, and each and the model's output.
            - ``sites``: the rows read in each block: ``("resid_post",)``, or with
              ``"resid_mid"`` also a row after each attention.
            - ``decompose``: direct logit attribution: each component's share of every cell's
              top-1 logit, of the answer and of each target (the "why" panel, the component
              view).
            - ``heads``: with ``decompose``: split each attention into its heads.
            - ``groups``: token groups whose summed probability every cell keeps (name ->
              a :class:`~murano_widgets.TokenGroup`, a word, or one per prompt): the
              result's ``group_probs``.

    Returns:
        The widget.

    Raises:
        ValueError: Naming ``chat`` when the tokenizer has no chat template, and for other bad
            arguments (before the model runs).
    """
    from murano_widgets.chat import check_chat

    # The widget's view arguments, by trait name (``lens_name`` is the trait ``lens``: here
    # ``lens`` is the lens itself), as the table lists them: nothing here re-lists them (a
    # trait this function does not take, such as ``group``, starts at the widget's default).
    arguments = locals()
    chosen = {
        line.name: arguments[line.show_argument]
        for line in VIEW_TRAITS
        if line.show_argument in arguments
    }
    check_model(model)
    # The widget's own arguments are checked before the model runs, as the run's are (the
    # prompts and every option are validated once, by run_logit_lens, before any model work).
    chat = options.get("chat")
    if chat is not None and prompts is None:
        n_prompts: int | None = len(check_chat(chat))
    elif isinstance(prompts, str) or prompts is None:
        n_prompts = 1  # run_logit_lens names what is missing
    else:
        n_prompts = len(prompts) if isinstance(prompts, Sequence) else None
    targets = options.get("targets")
    check_planned(
        Planned(
            n_prompts=n_prompts,
            layers=lambda: resolve_layers(layers, model.n_layers),
            targets=list(targets) if isinstance(targets, (list, tuple)) else [],
            lens_names=lambda: list(named_lenses(lens) or [as_lens(lens).kind]),
            chosen=chosen,
            chat=chat is not None,
            decompose=bool(options.get("decompose")),
        )
    )
    # The session's options (the step's and generation's), as the TypedDict checked them.
    forwarded: dict[str, Any] = {
        key: value for key, value in options.items() if key not in _PER_PROMPT
    }
    session = LiveSession(model, layers, lens=lens, **forwarded)
    per_prompt: dict[str, Any] = {
        key: value for key, value in options.items() if key in _PER_PROMPT
    }
    result = session.run(prompts, **per_prompt)
    return LogitLensWidget(result, live=session, **chosen)
