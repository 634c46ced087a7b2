"""The ``ModelBackend`` contract: everything the pipeline steps may touch of a model.

A module of its own, importing nothing of the package, so that the argument checks
(:func:`murano_widgets._checks.check_model`) and the backends can both import it without an
import circle through the backends.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

__all__ = ["BlockBackend", "ModelBackend", "block_backend"]


@runtime_checkable
class ModelBackend(Protocol):
    """Everything the pipeline steps need of a model, and nothing more.

    Attributes:
        name: Where the model came from (a hub id or a folder), for titles and provenance.
        n_layers: The number of decoder blocks.
        tokenizer: A Hugging Face tokenizer with a pad token.
        vocab_size: The number of rows of the unembedding (the logits' width).
        device: Where the weights live.
        dtype: The unembedding's dtype.
        context_length: The hard limit on a prompt's tokens (a table of absolute positions,
            e.g. GPT-2's 1024), or ``None`` when positions are rotary or ALiBi.
        trained_length: The length the model was trained on, when positions are rotary or ALiBi
            (prompts beyond it run, with a warning), else ``None``.
        forward_kwargs: The keyword arguments the model's forward accepts (``position_ids``,
            ``use_cache``, ``logits_to_keep``, ...).

    Two more members are optional, and not part of the structural check (a backend without
    them still runs the lens): ``generate(inputs, **generate_kwargs) -> Tensor``, the token ids
    (``[batch, prompt + new]``) that transformers' ``generate`` arguments give after ``inputs``.
    ``show_logit_lens(..., generate=N)`` needs it. :class:`MuranoModel` has it for both
    backends, through nnsight's ``generate`` (0.7 and 0.8 alike:
    :func:`murano_widgets.generation.nnsight_generate`). And
    ``block_outputs(inputs, layers, **forward_kwargs) -> {layer: Tensor}``: a local forward pass
    keeping those blocks' outputs, what a trace saving ``layer(i)`` gives; where it is there,
    the step takes it instead of a trace for block outputs alone (it costs a trace's fixed
    overhead less: :meth:`MuranoModel.block_outputs`).
    """

    # Read-only members (properties): a backend may hold them as plain attributes or compute
    # them (MuranoModel.dtype reads the unembedding's); a settable attribute here would make a
    # type checker refuse every MuranoModel.

    @property
    def name(self) -> str: ...

    @property
    def n_layers(self) -> int: ...

    @property
    def tokenizer(self) -> Any: ...

    @property
    def vocab_size(self) -> int: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def dtype(self) -> torch.dtype: ...

    @property
    def context_length(self) -> int | None: ...

    @property
    def trained_length(self) -> int | None: ...

    @property
    def forward_kwargs(self) -> frozenset[str]: ...

    def trace(self, inputs: dict[str, torch.Tensor], **kwargs: Any) -> Any:
        """Opens one nnsight tracing context on ``inputs`` (``remote=True`` runs it on NDIF)."""
        ...

    def layer(self, index: int) -> Any:
        """Inside a trace: decoder block ``index``'s output, a ``[batch, seq, d_model]`` tensor."""
        ...

    def project_on_vocab(self, hidden: Any) -> Any:
        """Inside a trace: final norm, unembedding and any final-logit soft-capping."""
        ...

    def unembed(self, hidden: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Outside a trace: the same on plain ``[rows, d_model]`` tensors, into ``out`` if given."""
        ...


@runtime_checkable
class BlockBackend(ModelBackend, Protocol):
    """A :class:`ModelBackend` that also opens its blocks: what reading inside a block needs
    (``LogitLens(sites=('resid_mid', ...))``, ``decompose=True``). :class:`MuranoModel` is one,
    whatever its backend; the plain lens does not need these members.

    Attributes:
        config: The Hugging Face config (its ``model_type`` says where a block's sublayers are).
    """

    @property
    def config(self) -> Any:
        """The Hugging Face config of the model."""
        ...

    def block(self, index: int) -> Any:
        """Inside a trace: decoder block ``index``'s envoy (its sublayers by their own names)."""
        ...

    def unembedding_weight(self) -> Any:
        """Inside a trace: ``lm_head``'s weight where the model runs (on NDIF, the server's)."""
        ...


def block_backend(model: ModelBackend, needed_by: str) -> BlockBackend:
    """``model`` as a :class:`BlockBackend`, for code that reads inside its blocks
    (``LogitLens`` asks when it is made, so a trace never meets a missing member).

    Args:
        model: A model that passed :func:`murano_widgets._checks.check_model`.
        needed_by: What asked, for the message (``"decompose=True"``, ...).

    Raises:
        TypeError: If ``model`` lacks ``config``, ``block`` or ``unembedding_weight``, naming
            ``needed_by`` and the members missing.
    """
    if isinstance(model, BlockBackend):
        return model
    missing = [
        name for name in ("config", "block", "unembedding_weight") if not hasattr(model, name)
    ] or ["every member of BlockBackend"]
    raise TypeError(
        f"{needed_by} reads inside the model's blocks, so the model needs "
        f"{', '.join(missing)} as well (see murano_widgets.backends.contract.BlockBackend); "
        f"{type(model).__name__} has not"
    )


#: The contract's read-only members, in order (what ``check_model`` names when one is missing).
PROPERTIES = tuple(
    name for name, value in vars(ModelBackend).items() if isinstance(value, property)
)
