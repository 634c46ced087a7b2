"""``run_logit_lens``: the one entry that validates a request once and runs it (prompts or
chats, with or without generation) to a :class:`~murano_widgets.LogitLensResult`;
``show_logit_lens`` is the widget of its result.

It sits above the step (:mod:`murano_widgets.step.logit_lens`), generation
(:mod:`murano_widgets.generation`) and chats (:mod:`murano_widgets.chat`), which import nothing
from here: no import circle runs through them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from murano_widgets._checks import check_bool, check_model
from murano_widgets.chat import apply_chat, check_chat
from murano_widgets.generation import Generation, generate_tokens
from murano_widgets.lenses import Lens
from murano_widgets.results import LensResults, LogitLensResult, lenses_of
from murano_widgets.step.logit_lens import LogitLens
from murano_widgets.types import validate_answers, validate_foils, validate_prompts

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from murano_widgets.options import RunOptions

__all__ = ["run_logit_lens"]


# One lens in, one result out; lenses by name in, a LensResults out (a type checker reads these).
@overload
def run_logit_lens(
    model: Any,
    prompts: str | Sequence[str] | None = None,
    layers: Sequence[int] | str = "all",
    *,
    lens: Lens | None = None,
    answers: Any = None,
    foils: Any = None,
    chat: Any = None,
    generation: Generation | None = None,
    **options: Unpack[RunOptions],
) -> LogitLensResult: ...


@overload
def run_logit_lens(
    model: Any,
    prompts: str | Sequence[str] | None = None,
    layers: Sequence[int] | str = "all",
    *,
    lens: Mapping[str, Lens | None],
    answers: Any = None,
    foils: Any = None,
    chat: Any = None,
    generation: Generation | None = None,
    **options: Unpack[RunOptions],
) -> LensResults: ...


def run_logit_lens(
    model: Any,
    prompts: str | Sequence[str] | None = None,
    layers: Sequence[int] | str = "all",
    *,
    lens: Lens | Mapping[str, Lens | None] | None = None,
    answers: Any = None,
    foils: Any = None,
    chat: Any = None,
    generation: Generation | None = None,
    **options: Unpack[RunOptions],
) -> LogitLensResult | LensResults:
    """The logit lens of prompts or chats, optionally over what the model generates after them.

    What :func:`~murano_widgets.show_logit_lens` shows, as a
    :class:`~murano_widgets.LogitLensResult`. Every argument is checked before the model runs.

    Args:
        model: The model, e.g. ``MuranoModel("gpt2")`` or ``load_demo_model()``.
        prompts: One prompt or a list of prompts; ``None`` when ``chat`` is given.
        layers: ``"all"`` or a list of layer indices.
        lens: The lens (``None``: the logit lens), or several by name, ``{"logit": None,
            "tuned": tuned}``: one trace for all, and a :class:`~murano_widgets.LensResults`
            comes back.
        answers: As for :func:`~murano_widgets.show_logit_lens`.
        foils: With ``decompose=True``: an alternative to each prompt's answer (a string or
            ``None`` per prompt), so that the answer's attribution is to answer − foil.
        chat: A chat (a list of ``{"role": ..., "content": ...}`` messages) or a list of
            chats, instead of ``prompts``: the tokenizer's chat template is applied and each
            token's role recorded (see :mod:`murano_widgets.chat`).
        generation: What the model generates after each prompt (or chat) before the lens
            reads it, a :class:`~murano_widgets.Generation`; or give its options as keywords,
            ``generate=8, do_sample=True`` (``None`` and no keywords: no generation).
        **options: The options of :class:`~murano_widgets.LogitLens` and, one by one, those
            of :class:`~murano_widgets.Generation` (:class:`~murano_widgets.options.RunOptions`:
            typed, so a type checker and an IDE know each).

    Returns:
        The result (a :class:`~murano_widgets.LensResults` with named lenses, each of its
        results set alike); with ``generate``, its ``generated_texts`` and
        ``generation_starts`` are set; with ``chat``, its ``token_roles``.

    Raises:
        ValueError, TypeError: For bad arguments, naming them.
    """
    check_model(model)
    generation, step_options = Generation.from_keywords(generation, options)
    if chat is not None and prompts is not None:
        raise ValueError(
            "give prompts or chat, not both: chat= is applied through the tokenizer's chat "
            "template and makes the prompts itself"
        )
    if chat is None and prompts is None:
        raise ValueError("prompts is missing: give a prompt, a list of prompts, or chat=[...]")
    if isinstance(prompts, str):
        prompts = [prompts]
        if answers is not None and not isinstance(answers, dict):
            answers = [answers]
        if isinstance(foils, str):
            foils = [foils]
    # Before the step, whose remote=True also checks the installed nnsight: the arguments'
    # own conflict is said first.
    if generation.options is not None and check_bool("remote", step_options.get("remote", False)):
        raise ValueError(
            "generate= runs the model locally; with remote=True only the lens runs on NDIF. "
            "Generate locally (remote=False), or run the lens on a prompt that already holds "
            "the text"
        )
    step = LogitLens(model, layers, lens=lens, **step_options)
    roles: list[list[str]] | None = None
    if chat is not None:
        chats = check_chat(chat)
        applied = apply_chat(model.tokenizer, chats, generation.add_generation_prompt)
        texts, ids, roles = applied.texts, applied.ids, applied.roles
    else:
        texts = validate_prompts(prompts)
        ids = None
    if answers is not None:  # checked here, before generating; the step reuses the check
        answers = validate_answers(answers, len(texts))
    if foils is not None:
        if answers is None:
            raise ValueError(
                "foils are alternatives to the answers (answer − foil): give answers too"
            )
        foils = validate_foils(foils, len(texts))
    if generation.options is None:
        result = step.run(texts, answers, prompt_ids=ids, foils=foils)
        for one in _each_lens(result):
            one.token_roles = roles
        return result.validate()
    if ids is None:
        ids = [
            list(map(int, row))
            for row in model.tokenizer(texts, return_token_type_ids=False)["input_ids"]
        ]
    generated = generate_tokens(model, ids, generation.options)
    full_texts = [text + reply for text, reply in zip(texts, generated.texts, strict=True)]
    result = step.run(full_texts, answers, prompt_ids=generated.ids, foils=foils)
    for one in _each_lens(result):
        one.generated_texts = generated.texts
        one.generation_starts = generated.starts
        if roles is not None:
            one.token_roles = [
                row + ["assistant"] * (len(full) - len(row))
                for row, full in zip(roles, generated.ids, strict=True)
            ]
    return result.validate()


def _each_lens(result: LogitLensResult | LensResults) -> list[LogitLensResult]:
    """The result of each lens (one, or one per named lens: they read one batch, so the
    generated text and the chat roles are the same for all)."""
    return list(lenses_of(result).values())
