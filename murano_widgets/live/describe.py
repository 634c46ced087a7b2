"""Describe a cell from the live widget: :meth:`PatchscopeLens.describe` at the pinned cell.

The front end's "Describe this cell" (``js/src/live/describe.js``) sends the live request
``describe_patchscope`` with the cell's prompt, layer and position; the controller runs
:func:`describe_patchscope` on its worker and replies with the text (the reply's
``message``), which the front end shows as text. ``w.describe_patchscope(layer=...,
position=...)`` runs the same from Python. A set length, :data:`DESCRIBE_TOKENS` tokens,
generated greedily. (Not ``describe_cell``: a result's ``describe_cell`` gives a cell's
numbers.)
"""

from __future__ import annotations

from typing import Any

from murano_widgets._checks import check_index, check_int
from murano_widgets.lenses.patchscope import PatchscopeLens
from murano_widgets.live.worker import model_lock

__all__ = ["DESCRIBE_TOKENS", "describe_patchscope"]

#: How many tokens a described cell's text has (fewer if the model ends its text).
DESCRIBE_TOKENS = 8


def describe_patchscope(widget: Any, session: Any, prompt: Any, layer: Any, position: Any) -> str:
    """The text :meth:`PatchscopeLens.describe` gives for block ``layer``'s output at
    ``position`` (among the prompt's real tokens, as ``selected``'s) of the widget's prompt
    ``prompt``, through the Patchscope shown, :data:`DESCRIBE_TOKENS` tokens long.

    Raises:
        ValueError: Before any model work: the lens shown is not a Patchscope, the session
            runs on NDIF (describing generates with the model's weights here), or a prompt,
            layer or position out of range.
    """
    name = widget.lens_name or session.lens_names[0]
    lens = session.step.lenses[name]
    if not isinstance(lens, PatchscopeLens):
        raise ValueError(
            f"describe_patchscope needs a Patchscope: the lens shown, {name!r}, is a "
            f"{type(lens).__name__}; show a PatchscopeLens (lens_name=...) to describe its cells"
        )
    if getattr(session.step, "remote", False):
        raise ValueError(
            "describe_patchscope generates with the model's weights on this machine, and this "
            "widget runs on NDIF (remote=True): describe cells with a local model"
        )
    prompts = list(widget.prompts)
    index = check_index("prompt", prompt, len(prompts), "prompts")
    n_layers = int(session.model.n_layers)
    layer = check_int("layer", layer, -n_layers, n_layers - 1, "the model's last layer")
    position = check_int("position", position, None, None, None)
    with model_lock(session.model):
        return lens.describe(
            session.model, prompts[index], layer, position, max_new_tokens=DESCRIBE_TOKENS
        )
