"""How each field of a result is laid out, declared once, on the field itself.

Every field of :class:`~murano_widgets.LogitLensResult` carries a :class:`Spec` in its
dataclass metadata (``max_probs: torch.Tensor = cell()``): its role, its named axes and what a
cell without a value holds. Everything that walks the fields reads them from here:

- the result's shape checks (``LogitLensResult.validate``): each axis's size is known once
  (``layer``, ``prompt``, ``seq`` from the rows and the mask; ``target`` and ``component`` from
  their label lists; ``k`` and ``vocab`` from the first field that has them);
- combining and selecting prompts (:mod:`murano_widgets.results.combine`): a tensor is cut and
  joined along its ``prompt`` axis and padded along its ``seq`` axis with its ``fill``;
- what lenses side by side must share (``shared=True``: one batch, one set of rows);
- the result's repr.

A field without a spec is refused when the class is made (:func:`specs`), so a new field cannot
be forgotten by one of them. The axis order is the package's one order: ``[layer, prompt, seq,
...]``; a per-cell field puts its extra axes (``k``, ``target``, ``component``) last.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AXES",
    "CELL",
    "Spec",
    "cell",
    "nested",
    "per_prompt",
    "run",
    "specs",
    "tensor",
]

#: The named axes a field may have, and what sets each one's size.
AXES = {
    "layer": "the rows (addresses)",
    "prompt": "the prompts (attention_mask's rows)",
    "seq": "the padded positions (attention_mask's columns)",
    "k": "the top-k (the first field that has it)",
    "vocab": "the vocabulary (all_probs)",
    "target": "the tracked targets (targets)",
    "group": "the token groups (group_names)",
    "component": "the attributed components (component_labels)",
}
CELL = ("layer", "prompt", "seq")

#: What a cell without a value holds, by the field's kind: NaN for numbers, -1 for ids and
#: ranks (the step's fill), 0 in the attention mask, the pad id in ``input_ids``.
FILLS = ("nan", "-1", "0", "pad_id")


@dataclass(frozen=True)
class Spec:
    """One field's layout.

    Attributes:
        role: ``"tensor"`` (a tensor with named ``axes``), ``"nested"`` (nested lists of words
            with named ``axes``), ``"per_prompt"`` (a list with one entry per prompt),
            ``"run"`` (the same for every prompt: the model, the lens, the rows, the options)
            or ``"own"`` (combined by its own rule: the string table, the answer sets).
        axes: The named axes (:data:`AXES`), in order.
        fill: What a cell without a value holds (:data:`FILLS`); ``""`` for words.
        answers: Only a batch with answers has it: a part without answers holds its prompts
            as prompts without an answer (NaN), as one call with ``None`` for them does.
        shared: Lenses side by side on one batch hold it equal.
    """

    role: str
    axes: tuple[str, ...] = ()
    fill: str = "nan"
    answers: bool = False
    shared: bool = False

    def __post_init__(self) -> None:
        unknown = [axis for axis in self.axes if axis not in AXES]
        if unknown or self.fill not in (*FILLS, ""):
            raise ValueError(f"a field spec with unknown axes {unknown} or fill {self.fill!r}")

    @property
    def prompt_axis(self) -> int:
        """The index of the ``prompt`` axis (the depth, for nested lists)."""
        return self.axes.index("prompt")

    @property
    def seq_axis(self) -> int | None:
        """The index of the ``seq`` axis, or ``None`` for a field without one."""
        return self.axes.index("seq") if "seq" in self.axes else None


def _field(spec: Spec, required: bool) -> Any:
    if required:
        return dataclasses.field(metadata={"spec": spec})
    return dataclasses.field(default=None, metadata={"spec": spec})


def tensor(
    *axes: str, fill: str = "nan", answers: bool = False, shared: bool = False, required=False
) -> Any:
    """A tensor field with named ``axes``."""
    return _field(Spec("tensor", axes, fill, answers, shared), required)


def cell(*extra: str, fill: str = "nan", answers: bool = False, required: bool = False) -> Any:
    """A per-cell tensor ``[layer, prompt, seq, *extra]``."""
    return tensor(*CELL, *extra, fill=fill, answers=answers, required=required)


def nested(*axes: str, shared: bool = False, required: bool = False) -> Any:
    """Nested lists of words with named ``axes`` (``""`` where there is none)."""
    return _field(Spec("nested", axes, "", shared=shared), required)


def per_prompt(*, answers: bool = False, shared: bool = False) -> Any:
    """A list with one entry per prompt."""
    return _field(Spec("per_prompt", ("prompt",), answers=answers, shared=shared), False)


def run(*, shared: bool = False, required: bool = False) -> Any:
    """What one step call holds for all its prompts (the model, the lens, the rows)."""
    return _field(Spec("run", shared=shared), required)


def own() -> Any:
    """A field combined by its own rule."""
    return _field(Spec("own"), False)


def specs(cls: type) -> dict[str, Spec]:
    """Every field of the dataclass ``cls`` with its spec, in declaration order.

    Raises:
        TypeError: For a field declared without one.
    """
    found = {}
    for item in dataclasses.fields(cls):
        spec = item.metadata.get("spec")
        if not isinstance(spec, Spec):
            raise TypeError(
                f"{cls.__name__}.{item.name} has no layout: declare it with one of "
                "murano_widgets.results.schema's cell(), tensor(), nested(), per_prompt(), run()"
            )
        found[item.name] = spec
    return found
