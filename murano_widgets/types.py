"""Pipeline types: component addresses, prompt batches, the results container and steps.

These follow Murano's pipeline vocabulary so that code written against Murano's contract runs
here unchanged: a step is a callable ``step(results) -> results`` and ``results`` is a dict-like
container (a plain ``dict`` works too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from murano_widgets._checks import TextError, check_text

RESID_POST = "resid_post"
"""The module name of a decoder block's output (the residual stream after the block)."""
RESID_MID = "resid_mid"
"""The residual stream inside a block, after its attention and before its MLP."""
SITES = (RESID_MID, RESID_POST)
"""The points of a block the lens can read, in the order its rows interleave."""

_NODE_PATTERN = re.compile(r"^L(-?\d+)\.([A-Za-z_][A-Za-z0-9_]*)$")


@dataclass(frozen=True, order=True)
class Node:
    """The address of a component: a layer and a module inside it.

    ``str(Node(5, "resid_post")) == "L5.resid_post"`` and ``Node.parse`` reads it back.

    Attributes:
        layer: The decoder layer index (0 is the first block).
        module: The component of that layer, e.g. ``"resid_post"``.
    """

    layer: int
    module: str = RESID_POST

    def __post_init__(self) -> None:
        if isinstance(self.layer, bool) or not isinstance(self.layer, int):
            raise TypeError(f"Node layer must be an int, got {self.layer!r}")
        if not isinstance(self.module, str) or not self.module:
            raise TypeError(f"Node module must be a non-empty string, got {self.module!r}")

    def __str__(self) -> str:
        return f"L{self.layer}.{self.module}"

    @classmethod
    def parse(cls, text: str) -> Node:
        """Reads a node back from its string form, e.g. ``"L5.resid_post"``.

        Raises:
            ValueError: If ``text`` is not of the form ``L<int>.<module>``.
        """
        match = _NODE_PATTERN.match(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(
                f"text must look like 'L<layer>.<module>' (e.g. 'L5.resid_post'), got {text!r}"
            )
        return cls(int(match.group(1)), match.group(2))


@dataclass
class PromptBatch:
    """A batch of prompts, the input of most steps.

    Attributes:
        prompts: The texts the model reads, one per input.
        raw_prompts: The prompts before any templating, if they differ; else ``None``.
        source: Where the prompts came from (``"manual"``, a data set name, ...).
        metadata: Free-form information carried along with the batch.
        answers: The expected answer of each prompt, scored by the logit lens layer by layer:
            a list with one entry per prompt (a string, a list of accepted strings, or
            ``None`` for no answer), or a dict of named answer sets, each such a list (e.g.
            ``{"english": [...], "french": [...]}``); ``None`` for no answers.
        foils: An alternative to each prompt's answer (a string, or ``None``), for direct
            logit attribution of the difference answer − foil (``LogitLens(decompose=True)``);
            its first token counts, as it would follow the prompt. Needs ``answers``.
    """

    prompts: list[str]
    raw_prompts: list[str] | None = None
    source: str = "manual"
    metadata: dict[str, Any] = field(default_factory=dict)
    answers: Any = None
    foils: list[str | None] | None = None

    def __post_init__(self) -> None:
        self.prompts = validate_prompts(self.prompts)
        if self.answers is not None:
            self.answers = validate_answers(self.answers, len(self.prompts))
        if self.foils is not None:
            if self.answers is None:
                raise ValueError(
                    "foils are alternatives to the answers (answer − foil): give answers=[...] too"
                )
            self.foils = validate_foils(self.foils, len(self.prompts))

    def __len__(self) -> int:
        return len(self.prompts)


def validate_foils(foils: Any, n_prompts: int, argument: str = "foils") -> list[str | None]:
    """Checks one foil (a non-empty string, or ``None``) per prompt.

    Raises:
        TypeError: If ``foils`` is not a list, or an entry is neither a string nor ``None``.
        ValueError: If its length differs from the number of prompts, or an entry is ``""`` or
            holds a lone surrogate.
    """
    if isinstance(foils, (str, bytes)) or not isinstance(foils, (list, tuple)):
        raise TypeError(
            f"{argument} must be a list with one string (or None) per prompt, got "
            f"{type(foils).__name__} {foils!r:.60}"
        )
    if len(foils) != n_prompts:
        raise ValueError(f"{argument} has {len(foils)} entries for {n_prompts} prompts")
    for index, foil in enumerate(foils):
        check_text(foil, f"{argument}[{index}]", blank=True, optional=True)
    return list(foils)


def validate_prompts(prompts: Any, argument: str = "prompts") -> list[str]:
    """Checks a batch of prompts and returns it as a list of strings.

    Raises:
        TypeError: If ``prompts`` is not an ordered collection of strings (a set is refused).
        ValueError: If it is empty, or a prompt is empty or holds a lone surrogate.
    """
    if isinstance(prompts, str):
        raise TypeError(
            f"{argument} must be a list of strings, got a single string {prompts[:40]!r}; "
            f"wrap it in a list: [{prompts[:40]!r}]"
        )
    if isinstance(prompts, Mapping) or not hasattr(prompts, "__iter__"):
        raise TypeError(f"{argument} must be a list of strings, got {type(prompts).__name__}")
    if isinstance(prompts, (set, frozenset)):
        # A set's order is arbitrary: the widget's prompt slider would follow it.
        raise TypeError(
            f"{argument} must be a list of strings in the order you want them, got a "
            f"{type(prompts).__name__}; use a list (e.g. sorted(...))"
        )
    prompts = list(prompts)
    if not prompts:
        raise ValueError(f"{argument} is empty: give at least one prompt")
    for index, prompt in enumerate(prompts):
        check_text(prompt, f"{argument}[{index}]", role=PROMPT_NEEDS)
    return prompts


def check_encodable(text: str, argument: str) -> None:
    """Raises ``ValueError`` if ``text`` holds a lone surrogate (no tokenizer can encode it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        char = text[error.start]
        raise ValueError(
            f"{argument} holds a lone surrogate U+{ord(char):04X} at character "
            f"{error.start} ({text[max(0, error.start - 10) : error.start + 10]!r}), which "
            "no tokenizer can encode: text must be valid Unicode"
        ) from None


def check_texts(texts: Any, argument: str = "texts") -> None:
    """Raises ``ValueError`` unless ``texts`` is a non-empty list of encodable strings: the
    training or fitting texts of a lens (a lone string is the usual slip, and is named)."""
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
        hint = "; wrap one text in a list: [text]" if isinstance(texts, str) else ""
        raise ValueError(
            f"{argument} must be a non-empty list of strings, got {type(texts).__name__}{hint}"
        )
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"{argument}[{index}] is {type(text).__name__}, not a string")
        check_encodable(text, f"{argument}[{index}]")


AnswerSets = dict[str, list[list[str] | None]]

#: Why a prompt of white space alone is refused (the message of every prompt check).
PROMPT_NEEDS = "every prompt needs at least one visible character"


class _CheckedAnswers(dict):
    """Answer sets that :func:`validate_answers` has checked (so a step need not again)."""

    def __init__(self, sets: AnswerSets, n_prompts: int) -> None:
        super().__init__(sets)
        self.n_prompts = n_prompts


def validate_answers(answers: Any, n_prompts: int, argument: str = "answers") -> AnswerSets:
    """Checks answers against ``n_prompts`` prompts; returns named sets of accepted strings.

    A plain list becomes the one set ``"answer"``; each entry becomes a list of accepted
    strings (``None`` stays ``None``: that prompt has no answer).

    Raises:
        TypeError: If ``answers`` is not a list or a dict of lists, or an entry is not a
            string, a list of strings or ``None``.
        ValueError: If a list's length differs from the number of prompts, a set name is
            empty, an answer is the empty string, or no prompt has an answer in any set.
    """
    if isinstance(answers, _CheckedAnswers) and answers.n_prompts == n_prompts:
        return answers
    if isinstance(answers, Mapping):
        if not answers:
            raise ValueError(f"{argument} is an empty dict: give at least one named answer set")
        sets = {}
        for name, entries in answers.items():
            if not isinstance(name, str) or not name.strip():
                raise ValueError(
                    f"{argument} names must be non-empty strings, got {name!r} "
                    f"(in {list(answers)!r})"
                )
            sets[name] = _answer_list(entries, n_prompts, f"{argument}[{name!r}]")
    else:
        sets = {"answer": _answer_list(answers, n_prompts, argument)}
    if all(entry is None for entries in sets.values() for entry in entries):
        raise ValueError(f"{argument} has no answer for any prompt (all None)")
    return _CheckedAnswers(sets, n_prompts)


def _answer_list(entries: Any, n_prompts: int, argument: str) -> list[list[str] | None]:
    # Any ordered collection (a list, a tuple, a pandas column); not a set: its order is not
    # the prompts'.
    if isinstance(entries, (str, Mapping, set, frozenset)) or not hasattr(entries, "__iter__"):
        hint = f"; for one prompt write [{entries!r}]" if isinstance(entries, str) else ""
        raise TypeError(
            f"{argument} must be a list with one answer per prompt (a string, a list of "
            f"accepted strings, or None), got {type(entries).__name__}{hint}"
        )
    entries = list(entries)
    if len(entries) != n_prompts:
        raise ValueError(
            f"{argument} has {len(entries)} entries for {n_prompts} prompts: give one answer "
            "per prompt (None where a prompt has none)"
        )
    return [check_answer(entry, f"{argument}[{index}]") for index, entry in enumerate(entries)]


def check_answer(entry: Any, where: str) -> list[str] | None:
    """One prompt's answer entry as its accepted strings (duplicates dropped, order kept), or
    ``None``: a string, a non-empty list (or tuple, or array) of strings, or ``None``. Used by
    :func:`validate_answers` for a list and by a data set's stream for each item as it arrives.

    Raises:
        TypeError, ValueError: Naming ``where`` (``answers[3]``), what was given and what is
            allowed.
    """
    if entry is None:
        return None
    accepted = [entry] if isinstance(entry, str) else entry
    if isinstance(accepted, np.ndarray):
        accepted = accepted.tolist()  # a column of lists read back as arrays
    if not isinstance(accepted, (list, tuple)) or not accepted:
        raise TextError(
            f"{where}: expected a non-empty string, a non-empty list of accepted strings or "
            f"None, got {entry!r:.60} ({type(entry).__name__})"
        )
    for index, text in enumerate(accepted):
        # A list's entries are named by their own index: answers[2][1].
        check_text(text, where if isinstance(entry, str) else f"{where}[{index}]", blank=True)
    return list(dict.fromkeys(accepted))


def validate_targets(targets: Any, argument: str = "targets") -> list[str]:
    """Checks the strings to track at every position.

    Raises:
        TypeError: If ``targets`` is not an ordered collection of strings.
        ValueError: If it is empty, holds an empty string or a duplicate.
    """
    if isinstance(targets, str):
        raise TypeError(
            f"{argument} must be a list of strings, got the single string {targets!r}; "
            f"write [{targets!r}]"
        )
    if isinstance(targets, (set, frozenset, Mapping)) or not isinstance(targets, (list, tuple)):
        raise TypeError(
            f"{argument} must be a list of strings in the order to show them, got "
            f"{type(targets).__name__}"
        )
    if not targets:
        raise ValueError(f"{argument} is empty: give at least one string, or None for none")
    seen: dict[str, int] = {}
    for index, text in enumerate(targets):
        check_text(text, f"{argument}[{index}]", blank=True)
        if text in seen:
            raise ValueError(f"{argument} holds {text!r} twice (at {seen[text]} and {index})")
        seen[text] = index
    return list(targets)


class Results(dict):
    """The container passed from step to step: a ``dict`` keyed by field name.

    ``results["prompts"]`` holds a :class:`PromptBatch`; each step adds its own key (the logit
    lens writes ``results["logit_lens"]``).
    """

    def __repr__(self) -> str:
        inner = ", ".join(f"{key!r}: {type(value).__name__}" for key, value in self.items())
        return f"Results({{{inner}}})"


@runtime_checkable
class Step(Protocol):
    """A pipeline step: reads some fields of the results and returns them with its own added."""

    def __call__(self, results: dict[str, Any]) -> dict[str, Any]: ...
