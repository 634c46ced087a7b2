"""Pipeline types: component addresses, prompt batches, the results container and steps.

These follow Murano's pipeline vocabulary so that code written against Murano's contract runs
here unchanged: a step is a callable ``step(results) -> results`` and ``results`` is a dict-like
container (a plain ``dict`` works too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

RESID_POST = "resid_post"
"""The module name of a decoder block's output (the residual stream after the block)."""

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
    """

    prompts: list[str]
    raw_prompts: list[str] | None = None
    source: str = "manual"
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.prompts = validate_prompts(self.prompts)

    def __len__(self) -> int:
        return len(self.prompts)


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
        if not isinstance(prompt, str):
            raise TypeError(
                f"{argument}[{index}] must be a string, got {type(prompt).__name__} {prompt!r}"
            )
        if not prompt.strip():
            raise ValueError(
                f"{argument}[{index}] is empty or only white space ({prompt!r}): "
                "every prompt needs at least one visible character"
            )
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError as error:
            char = prompt[error.start]
            raise ValueError(
                f"{argument}[{index}] holds a lone surrogate U+{ord(char):04X} at character "
                f"{error.start} ({prompt[max(0, error.start - 10) : error.start + 10]!r}), which "
                "no tokenizer can encode: prompts must be valid Unicode text"
            ) from None
    return prompts


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
