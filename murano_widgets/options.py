"""The options the entry points forward, declared once and typed.

:func:`~murano_widgets.run_logit_lens`, :class:`~murano_widgets.LiveSession` and
:func:`~murano_widgets.show_logit_lens` pass most of their keywords on (to the
:class:`~murano_widgets.LogitLens` step, to generation). Each of those option sets is one
:class:`~typing.TypedDict` here, and each entry point's ``**options`` is typed with it
(``**options: Unpack[ShowOptions]``, PEP 692): a type checker refuses a misspelled option, and an
IDE completes every one, while the calls stay as they are (``show_logit_lens(model, prompts,
top_k=10)``). ``tests/test_options.py`` holds each set equal to the parameters it forwards to,
so a new step option is added here once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from murano_widgets.generation import Generation

__all__ = [
    "GenerateOptions",
    "PromptOptions",
    "RunOptions",
    "ShowOptions",
    "StepOptions",
]


class StepOptions(TypedDict, total=False):
    """The keyword options of the :class:`~murano_widgets.LogitLens` step (its Args say each).

    ``store_full_probs``, ``top_k``, ``max_chunk_bytes``, ``remote``, ``reduce_in_trace``,
    ``targets``, ``variants``, ``positions``, ``kl_between_lenses``, ``sites``, ``decompose``,
    ``heads``, ``groups``.
    """

    store_full_probs: bool
    top_k: int
    max_chunk_bytes: int
    remote: bool
    reduce_in_trace: bool | None
    targets: Sequence[str] | None
    variants: bool
    positions: Literal["all", "last"]
    kl_between_lenses: bool
    sites: Sequence[str]
    decompose: bool
    heads: bool
    groups: Mapping[str, Any] | None


class GenerateOptions(TypedDict, total=False):
    """The options of :class:`~murano_widgets.Generation` (its Attributes say each), as the
    entry points also take them one by one: ``generate``, ``do_sample``, ``temperature``,
    ``top_p``, ``seed``, and with chats ``add_generation_prompt``
    (:meth:`Generation.from_keywords <murano_widgets.Generation.from_keywords>` reads them)."""

    generate: int | None
    do_sample: bool
    temperature: float | None
    top_p: float | None
    seed: int | None
    add_generation_prompt: bool


class RunOptions(StepOptions, GenerateOptions, total=False):
    """What :func:`~murano_widgets.run_logit_lens` and :class:`~murano_widgets.LiveSession`
    take as keywords beside their own (``lens``, ``generation``): the step's options and the
    generation options one by one."""


class PromptOptions(TypedDict, total=False):
    """What belongs to the prompts (:func:`~murano_widgets.run_logit_lens`'s Args say each):
    ``answers``, ``foils`` and ``chat``."""

    answers: Any
    foils: Any
    chat: Any


class ShowOptions(StepOptions, GenerateOptions, PromptOptions, total=False):
    """What :func:`~murano_widgets.show_logit_lens` forwards (``**options``): the step's
    options, generation (as one record, ``generation``, or its options one by one) and the
    prompts' own; ``lens`` is its own parameter."""

    generation: Generation | None
