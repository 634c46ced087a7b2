"""Lenses: how a block's output is read before the model's final norm and unembedding.

One type, :class:`Lens` (``kind``, ``title``, ``provenance``, ``check(model)``,
``translate(layer, hidden)``, and the last-layer rule in ``read``); the logit lens is its
identity, :data:`IDENTITY`; the tuned lens (:class:`murano_widgets.TunedLens`, ``tuned``) is a
kind of it, trained by ``train`` and evaluated through the step by ``evaluate``.

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
