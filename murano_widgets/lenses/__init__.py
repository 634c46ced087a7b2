"""Lenses: how a block's output is read before the model's final norm and unembedding.

One type, :class:`Lens` (``kind``, ``title``, ``provenance``, ``check(model)``,
``translate(layer, hidden)``, and the last-layer rule in ``read``); the logit lens is its
identity, :data:`IDENTITY`; the tuned lens (:class:`murano_widgets.TunedLens`, ``tuned``) and
the Jacobian lens (:class:`murano_widgets.JacobianLens`, ``jacobian``) and the Patchscope
(:class:`murano_widgets.PatchscopeLens`, ``patchscope``, which reads a state by running the
model: ``Lens.logits``) are kinds of it. The tuned
lens is trained by ``train``, the Jacobian lens fitted by ``jacobian_fit`` and found by name in
``jacobian_hub`` (its registry: ``jacobian_registry.json``); ``evaluate`` measures any lens
through the step.

To add a lens kind: subclass :class:`Lens` (``kind``, ``title``, ``translate``; ``check`` when it
was made for one model) and pass an instance as ``lens=``: every view takes its title from the
result.
"""

from murano_widgets.lenses.base import (
    FINAL,
    IDENTITY,
    IdentityLens,
    Lens,
    as_lens,
    lens_label,
    named_lenses,
    title_of,
)

__all__ = [
    "FINAL",
    "IDENTITY",
    "IdentityLens",
    "Lens",
    "as_lens",
    "lens_label",
    "named_lenses",
    "title_of",
]
