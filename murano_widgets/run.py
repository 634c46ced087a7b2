"""``run_logit_lens``: the one entry that validates a request once and runs it (prompts or
chats, with or without generation) to a :class:`~murano_widgets.LogitLensResult`;
``show_logit_lens`` is the widget of its result.

It sits above the step (:mod:`murano_widgets.step.logit_lens`), generation
(:mod:`murano_widgets.generation`) and chats (:mod:`murano_widgets.chat`), which import nothing
from here: no import circle runs through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from murano_widgets._checks import check_bool, check_model
from murano_widgets.chat import apply_chat, check_chat
from murano_widgets.generation import check_generation, generate_tokens
from murano_widgets.results import LensResults, LogitLensResult, lenses_of
from murano_widgets.step.logit_lens import LogitLens
from murano_widgets.types import validate_answers, validate_foils, validate_prompts

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from murano_widgets.options import RunOptions

__all__ = ["run_logit_lens"]


def run_logit_lens(
    model: Any,
    prompts: str | Sequence[str] | None = None,
    layers: Sequence[int] | str = "all",
    *,
    answers: Any = None,
    foils: Any = None,
    generate: int | None = None,
    do_sample: bool = False,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    chat: Any = None,
    add_generation_prompt: bool = True,
    **step_options: Unpack[RunOptions],
) -> LogitLensResult | LensResults:
    """The logit lens of prompts or chats, optionally over what the model generates after them.

    What :func:`~murano_widgets.show_logit_lens` shows, as a
    :class:`~murano_widgets.LogitLensResult`. Every argument is checked before the model runs.

    Args:
        model: The model, e.g. ``MuranoModel("gpt2")`` or ``load_demo_model()``.
        prompts: One prompt or a list of prompts; ``None`` when ``chat`` is given.
        layers: ``"all"`` or a list of layer indices.
        answers: As for :func:`~murano_widgets.show_logit_lens`.
        foils: With ``decompose=True``: an alternative to each prompt's answer (a string or
            ``None`` per prompt), so that the answer's attribution is to answer − foil.
        generate: Generate up to this many tokens after each prompt (or chat) and show the
            lens over them too; ``None`` for no generation.
        do_sample: Sample rather than take the most likely token (greedy, the default).
        temperature: Sampling temperature (only with ``do_sample=True``).
        top_p: Nucleus sampling's probability mass (only with ``do_sample=True``).
        seed: Makes sampling reproducible (only with ``do_sample=True``).
        chat: A chat (a list of ``{"role": ..., "content": ...}`` messages) or a list of
            chats, instead of ``prompts``: the tokenizer's chat template is applied and each
            token's role recorded (see :mod:`murano_widgets.chat`).
        add_generation_prompt: With ``chat``: end with the template's opening of an assistant
            turn (what a chat model reads before it replies).
        **step_options: Passed to :class:`~murano_widgets.LogitLens`
            (:class:`~murano_widgets.options.RunOptions`: typed, so a type checker and an IDE
            know each); ``lens`` may name several lenses, ``lens={"logit": None, "tuned":
            tuned}``: one trace for all.

    Returns:
        The result (a :class:`~murano_widgets.LensResults` with named lenses, each of its
        results set alike); with ``generate``, its ``generated_texts`` and
        ``generation_starts`` are set; with ``chat``, its ``token_roles``.

    Raises:
        ValueError, TypeError: For bad arguments, naming them.
    """
    check_model(model)
    options = check_generation(generate, do_sample, temperature, top_p, seed)
    add_generation_prompt = check_bool("add_generation_prompt", add_generation_prompt)
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
    if options is not None and check_bool("remote", step_options.get("remote", False)):
        raise ValueError(
            "generate= runs the model locally; with remote=True only the lens runs on NDIF. "
            "Generate locally (remote=False), or run the lens on a prompt that already holds "
            "the text"
        )
    step = LogitLens(model, layers, **step_options)
    roles: list[list[str]] | None = None
    if chat is not None:
        chats = check_chat(chat)
        applied = apply_chat(model.tokenizer, chats, add_generation_prompt)
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
    if options is None:
        result = step.run(texts, answers, prompt_ids=ids, foils=foils)
        for one in _each_lens(result):
            one.token_roles = roles
        return result.validate()
    if ids is None:
        ids = [
            list(map(int, row))
            for row in model.tokenizer(texts, return_token_type_ids=False)["input_ids"]
        ]
    generated = generate_tokens(model, ids, options)
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
