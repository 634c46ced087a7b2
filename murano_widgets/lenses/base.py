"""The lens type: how a block's output is read before the final norm and the unembedding.

A lens maps layer ``l``'s block output ``h`` to the state the model's final norm and unembedding
read: the logit lens is the identity, the tuned lens adds a learned affine translator. Every
kind is a subclass of :class:`Lens`; the step, the comparison, the data set, the widget, the
static plot and the HTML export use nothing but these members, so a new kind (written inside
this package or outside it) needs no change anywhere else.

To add a lens kind: subclass :class:`Lens`, set ``kind`` (a short id recorded in results and
provenance) and ``title`` (what the widget, the plot and the export call it), implement
:meth:`Lens.translate` (and :meth:`Lens.check` when the lens was made for one model), and pass an
instance as ``lens=``. A lens that reads a state some other way than the final norm and the
unembedding (the Patchscope runs the model) overrides :meth:`Lens.logits` (and, to run inside a
trace, on NDIF, has a ``read_in_trace(model, layer, hidden, n_layers)`` that the step's trace
calls instead of :meth:`Lens.read`), and refuses the step options it cannot run with in
:meth:`Lens.check_step`.

Several lenses side by side go by name, ``lens={"logit": None, "tuned": tuned}``
(:func:`named_lenses` checks them): one trace for all, and every view shows each.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch

from murano_widgets._version import __version__

__all__ = [
    "FINAL",
    "IDENTITY",
    "IdentityLens",
    "Lens",
    "as_lens",
    "lens_label",
    "lens_versions",
    "model_context",
    "model_name",
    "model_width",
    "named_lenses",
    "title_of",
]

FINAL = "final"
"""What tables of lenses side by side call the model's own output (the last layer's distribution,
which no lens translates): a lens may not take this name."""


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

    def check_step(self, step: Any) -> None:  # noqa: B027 - most lenses run in every step
        """Raises ``ValueError`` if the lens cannot run with ``step``'s options (the
        :class:`~murano_widgets.LogitLens`'s options record, every option checked, with the
        step's option names: ``remote``, ``sites``, ``model``, ...): a lens that runs the
        model to read a state (:class:`~murano_widgets.PatchscopeLens`) refuses direct logit
        attribution.
        Called at the end of the step's ``__init__``, before any model work."""

    def logits(
        self,
        model: Any,
        layer: int,
        hidden: Any,
        n_layers: int,
        out: Any = None,
        max_bytes: int | None = None,
    ) -> Any:
        """The lens's logits for states read at block ``layer``'s output: what the step's
        chunk loop reduces to every cell's fields.

        This default is :meth:`read` then the model's final norm and unembedding
        (``model.unembed``). A lens that reads a state some other way (a Patchscope runs the
        model on a target prompt with the state patched in) overrides it; every field of a
        result then comes out of its logits as for any lens.

        Args:
            model: The model backend (outside any trace).
            layer: The block whose output ``hidden`` is (a ``resid_mid`` row of block ``l``
                is read as block ``l - 1``'s output).
            hidden: ``[rows, d_model]``.
            n_layers: The model's number of blocks.
            out: A ``[rows, vocab]`` tensor to write the logits into, or ``None``.
            max_bytes: About the memory the call may take beyond ``out`` (the step's
                ``max_chunk_bytes``), or ``None`` for no bound.

        Returns:
            ``[rows, vocab]`` logits (``out`` when given).
        """
        return model.unembed(self.read(layer, hidden, n_layers), out=out)

    @abstractmethod
    def translate(self, layer: int, hidden: Any) -> Any:
        """Block ``layer``'s output ``hidden`` (``[..., d_model]``) as the final norm reads it."""

    def read(self, layer: int, hidden: Any, n_layers: int) -> Any:
        """``hidden`` translated, except at the last layer: the last block's output is the
        model's own prediction, which no lens changes (the one place this rule lives)."""
        if layer == n_layers - 1:
            return hidden
        return self.translate(layer, hidden)

    def pullback(self, layer: int, hidden: Any, direction: Any) -> tuple[Any, Any]:
        """The lens transposed at ``hidden``: what direct logit attribution needs of it.

        With ``T`` the lens at ``layer`` and ``M`` its Jacobian at ``hidden`` (the matrix
        itself for an affine lens), returns ``M^T r`` and ``r · (T(h) - M h)`` per row, so that
        ``r · T(h) = (M^T r) · h + offset`` exactly: a component ``x`` of ``h`` then contributes
        ``(M^T r) · x``, and the offset is the lens's own bias term.

        This default linearises any lens with autograd; the lenses of this package override it
        with their closed forms (no autograd inside a remote trace).

        Args:
            layer: The block whose output ``hidden`` is.
            hidden: ``[rows, d_model]``.
            direction: ``[rows, d_model]`` the readout direction ``r`` of each row.

        Returns:
            ``([rows, d_model], [rows])``.
        """
        with torch.inference_mode(False), torch.enable_grad():
            point = hidden.detach().clone().float().requires_grad_(True)
            translated = self.translate(layer, point).float()
            cotangent = direction.detach().clone().float()
            (pulled,) = torch.autograd.grad(translated, point, cotangent)
        pulled = pulled.detach()
        offset = (cotangent * translated.detach()).sum(-1) - (pulled * point.detach()).sum(-1)
        return pulled, offset

    def read_pullback(
        self, layer: int, hidden: Any, direction: Any, n_layers: int
    ) -> tuple[Any, Any]:
        """:meth:`pullback` as :meth:`read` reads: the last layer is the identity."""
        if layer == n_layers - 1:
            return direction, direction.new_zeros(direction.shape[:-1])
        return self.pullback(layer, hidden, direction)


class IdentityLens(Lens):
    """The logit lens: every block output read as it is."""

    kind: ClassVar[str] = "logit"
    title: ClassVar[str] = "Logit lens"

    def translate(self, layer: int, hidden: Any) -> Any:
        return hidden

    def read(self, layer: int, hidden: Any, n_layers: int) -> Any:
        return hidden

    def pullback(self, layer: int, hidden: Any, direction: Any) -> tuple[Any, Any]:
        return direction, direction.new_zeros(direction.shape[:-1])

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
    if isinstance(lens, Mapping):
        raise TypeError(
            f"{argument} must be None (the logit lens) or one murano_widgets.Lens here; got a "
            f"{type(lens).__name__} of {len(lens)} entries: named lenses side by side "
            "({'logit': None, 'tuned': tuned}) are taken by lens= of LogitLens, run_logit_lens, "
            "show_logit_lens and lens_dataset, and by lens_agreement(lenses=...)"
        )
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


def named_lenses(lens: Any, model: Any = None, argument: str = "lens") -> dict[str, Lens] | None:
    """Named lenses, ``{name: Lens}`` in the order given, or ``None`` when ``lens`` is not a
    mapping (one lens: :func:`as_lens` checks it).

    Every entry point that takes lenses side by side (``lens={"logit": None, "tuned": tuned}``)
    calls this before any model work.

    Args:
        lens: What was given.
        model: The (already checked) model the lenses will read, or ``None``.
        argument: The argument's name in the caller's signature.

    Raises:
        ValueError: For an empty mapping, a name that is empty or all spaces, or the name
            :data:`FINAL` (tables of lenses side by side use it for the model's own output).
        TypeError: For a name that is not a string, or a value that is neither ``None`` nor a
            :class:`Lens` (see :func:`as_lens`).
    """
    if not isinstance(lens, Mapping):
        return None
    example = "e.g. {'logit': None, 'tuned': TunedLens.load(folder, model)}"
    if not lens:
        raise ValueError(
            f"{argument} is an empty {type(lens).__name__}: give at least one named lens, {example}"
        )
    checked: dict[str, Lens] = {}
    for name, value in lens.items():
        if not isinstance(name, str):
            raise TypeError(
                f"{argument} must map names (non-empty strings) to lenses; got the key "
                f"{type(name).__name__} {name!r:.60}, {example}"
            )
        if not name.strip():
            raise ValueError(
                f"{argument} has the name {name!r}: a lens's name must be a non-empty string "
                "(the widget's lens menu and the tables' lens column show it)"
            )
        if name == FINAL:
            raise ValueError(
                f"{argument} has a lens named {FINAL!r}, which tables of lenses side by side "
                f"use for the model's own output: call it something else, {example}"
            )
        checked[name] = as_lens(value, model, argument=f"{argument}[{name!r}]")
    return checked


def lens_label(name: str, title: str) -> str:
    """What a legend or a menu calls a named lens: its title, with its name when the name says
    something else ("Tuned lens" for ``"tuned"``, "Tuned lens (tuned-2024)" for another name),
    so that two lenses of one kind stay apart. The widgets' ``lensMenuText`` (js/src/shared/
    lens_names.js) does the same."""

    def plain(text: str) -> str:
        return text.lower().removesuffix(" lens")

    return title if plain(title) == plain(name) else f"{title} ({name})"


# ---------------------------------------------------------------------------------------------
# What a lens reads of a model, and records of itself: shared by the tuned and Jacobian lenses
# and their training and fitting.


def model_width(model: Any) -> int | None:
    """The hidden size from the model's config (``hidden_size``, ``n_embd`` or ``d_model``)."""
    config = getattr(model, "config", None)
    candidates = [config]
    if config is not None and hasattr(config, "get_text_config"):
        candidates.append(config.get_text_config())
    for candidate in candidates:
        for name in ("hidden_size", "n_embd", "d_model"):
            value = getattr(candidate, name, None)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def model_context(model: Any) -> int | None:
    """The model's context from its config (``max_position_embeddings`` or ``n_positions``)."""
    config = getattr(model, "config", None)
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def model_name(model: Any) -> str:
    """The model's name (its ``name``, else its config's ``_name_or_path``, else its class)."""
    name = getattr(model, "name", None)
    if name:
        return str(name)
    config = getattr(model, "config", None)
    return str(getattr(config, "_name_or_path", "") or type(model).__name__)


def lens_versions() -> dict[str, str]:
    """The versions a made lens records in its provenance."""
    return {"package": f"murano_widgets {__version__}", "torch": torch.__version__}
