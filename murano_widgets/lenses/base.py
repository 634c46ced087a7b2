"""The lens type: how a block's output is read before the final norm and the unembedding.

A lens maps layer ``l``'s block output ``h`` to the state the model's final norm and unembedding
read: the logit lens is the identity, the tuned lens adds a learned affine translator. Every
kind is a subclass of :class:`Lens`; the step, the comparison, the data set, the widget, the
static plot and the HTML export use nothing but these members, so a new kind (written inside
this package or outside it) needs no change anywhere else.

To add a lens kind: subclass :class:`Lens`, set ``kind`` (a short id recorded in results and
provenance) and ``title`` (what the widget, the plot and the export call it), implement
:meth:`Lens.translate` (and :meth:`Lens.check` when the lens was made for one model), and pass an
instance as ``lens=``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = ["IDENTITY", "IdentityLens", "Lens", "as_lens", "title_of"]


class Lens(ABC):
    """A lens: ``translate(layer, hidden)`` before the model's final norm and unembedding.

    Attributes:
        kind: A short id of the lens family (``"logit"``, ``"tuned"``), recorded in a result's
            ``lens_kind`` and a data set's provenance.
        title: What the views call it ("Logit lens", "Tuned lens"): the widget's header, the
            static plot's title and the exported page's title all read it from the result.
        provenance: Where the lens came from (JSON-able): its source file, training, base model.
    """

    kind: ClassVar[str] = "custom"
    title: ClassVar[str] = "Custom lens"
    #: Where the lens came from (``None`` for a lens with no history, such as the identity).
    provenance: dict[str, Any] | None = None

    def check(self, model: Any) -> None:  # noqa: B027 - a lens for any model checks nothing
        """Raises ``ValueError`` if the lens does not fit ``model`` (layer count, width)."""

    def check_layers(self, layers: Sequence[int], n_layers: int) -> None:  # noqa: B027
        """Raises ``ValueError`` if the lens cannot read one of ``layers`` (block indices of a
        model of ``n_layers``; the last is read as it is): a lens fitted for some layers only.
        Called by the lens step before any model work; a lens that reads every layer checks
        nothing."""

    @abstractmethod
    def translate(self, layer: int, hidden: Any) -> Any:
        """Block ``layer``'s output ``hidden`` (``[..., d_model]``) as the final norm reads it."""

    def read(self, layer: int, hidden: Any, n_layers: int) -> Any:
        """``hidden`` translated, except at the last layer: the last block's output is the
        model's own prediction, which no lens changes (the one place this rule lives)."""
        if layer == n_layers - 1:
            return hidden
        return self.translate(layer, hidden)


class IdentityLens(Lens):
    """The logit lens: every block output read as it is."""

    kind: ClassVar[str] = "logit"
    title: ClassVar[str] = "Logit lens"

    def translate(self, layer: int, hidden: Any) -> Any:
        return hidden

    def read(self, layer: int, hidden: Any, n_layers: int) -> Any:
        return hidden

    def __repr__(self) -> str:
        return "IdentityLens()"


IDENTITY = IdentityLens()
"""The logit lens, shared: it holds no state."""


def title_of(result: Any) -> str:
    """The title of the lens that made ``result`` (a result, or a data set's provenance dict):
    what the widget, the static plot, the export and comparisons call it.

    A result from this package's step carries its lens's :attr:`Lens.title`; one from elsewhere
    (the released ``murano`` library's, an older saved data set) only a kind, whose title is
    made here, the same way for all views.
    """
    if isinstance(result, dict):
        title, kind = result.get("lens_title"), result.get("lens_kind")
    else:
        title, kind = getattr(result, "lens_title", None), getattr(result, "lens_kind", None)
    if isinstance(title, str) and title:
        return title
    kind = kind if isinstance(kind, str) and kind else IDENTITY.kind
    return IDENTITY.title if kind == IDENTITY.kind else f"{kind[:1].upper()}{kind[1:]} lens"


def as_lens(lens: Any, model: Any = None, argument: str = "lens") -> Lens:
    """``lens`` as a :class:`Lens` checked against ``model``: ``None`` is the logit lens.

    Called by every entry point that takes a lens, before any model work.

    Args:
        lens: What was given.
        model: The (already checked) model the lens will read, or ``None`` to check the lens's
            type alone.
        argument: The argument's name in the caller's signature (``"lens_b"``, ...).

    Raises:
        TypeError: For anything that is not a :class:`Lens` (a string or path: a lens folder
            not loaded yet, with the call that loads it).
        ValueError: If the lens does not fit ``model`` (its :meth:`Lens.check` says so).
    """
    if lens is None:
        return IDENTITY
    allowed = (
        f"{argument} must be None (the logit lens) or a murano_widgets.Lens, such as "
        "TunedLens.load(folder, model) or JacobianLens.load(path, model)"
    )
    if isinstance(lens, (str, bytes, os.PathLike)):
        where = os.fsdecode(lens)
        load = (
            f"JacobianLens.load({where!r:.60}, model)"
            if where.endswith(".pt")
            else f"TunedLens.load({where!r:.60}, model)"
        )
        raise TypeError(
            f"{allowed}; got {type(lens).__name__} {lens!r:.60}: to read a lens file or folder, "
            f"write {load}"
        )
    if not isinstance(lens, Lens):
        hint = (
            ": a lens with translate(layer, hidden) is a subclass of murano_widgets.Lens"
            if callable(getattr(lens, "translate", None))
            else ""
        )
        raise TypeError(f"{allowed}; got {type(lens).__name__}{hint}")
    if model is not None:
        lens.check(model)
    return lens
