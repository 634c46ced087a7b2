"""The model: the ``ModelBackend`` contract's users and ``MuranoModel``, the base of its backends.

The ``LogitLens`` step touches a model only through :class:`ModelBackend`. Two backends
implement it, both subclasses of :class:`MuranoModel`:

- ``backend="nnterp"`` (:mod:`murano_widgets.backends.nnterp`): nnterp's
  ``StandardizedTransformer``, one renaming layer over every architecture nnterp supports;
- ``backend="nnsight"`` (:mod:`murano_widgets.backends.nnsight`): plain nnsight, for nnsight
  versions nnterp does not work with (0.8, which NDIF's server requires).

Loading (a hub id or a folder, device and dtype, ``backend="auto"``'s choice, ``_BACKENDS``) is
:mod:`murano_widgets.backends.loading`; what a model does to its logits
(:class:`LogitTransform`) is read from its record in
:mod:`murano_widgets.backends.architectures`; the check against the model's own output is
:mod:`murano_widgets.backends.self_check`. The names a backend's author imports
(:func:`resolve_source`, :func:`resolve_dtype`, ...) are still importable from here.

To add a backend: subclass :class:`MuranoModel`; its ``__init__(self, model_id_or_path, *,
device=None, dtype=None, backend=..., **kwargs)`` loads the model (use :func:`resolve_source` and
:func:`resolve_dtype`, set ``self.device``, then call :meth:`MuranoModel._setup` once the
tokenizer and the Hugging Face model are there); implement ``trace``, ``layer``,
``project_on_vocab``, ``_root`` (the nnsight model whose ``output.logits`` is the model's own
output), the two plain modules ``_final_norm`` and ``_lm_head``, and the plain Hugging Face
model and its decoder blocks ``_hf_model`` and ``_blocks`` (what fitting a Jacobian lens
differentiates through); raise
:class:`UnsupportedModelError` for an architecture it cannot read; add it to ``loading.py``'s
``_BACKENDS``.

Whatever the backend, the lens is only as right as its last step: what the model does to
``lm_head``'s output before its softmax (:class:`LogitTransform`, read once per model from
its :class:`~murano_widgets.backends.architectures.Architecture` and the config). Every model
is checked once against its own output (:meth:`MuranoModel.self_check`): the lens of the last
layer must equal the model's own distribution, or the model is refused with
:class:`LensSelfCheckError` rather than returning wrong numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import torch

from murano_widgets._checks import check_bool
from murano_widgets.backends.architectures import (
    LOGIT_TRANSFORMS,
    LogitTransform,
    UnsupportedModelError,
    logit_transform,
)
from murano_widgets.backends.contract import ModelBackend
from murano_widgets.backends.loading import (
    BACKENDS,
    check_source_argument,
    ensure_pad_token,
    forward_parameters,
    load_model,
    position_limits,
    quiet_loading,
    resolve_device,
    resolve_dtype,
    resolve_source,
)
from murano_widgets.backends.self_check import LensSelfCheckError, check_against_own_output

__all__ = [
    "BACKENDS",
    "LOGIT_TRANSFORMS",
    "LensSelfCheckError",
    "LogitTransform",
    "ModelBackend",
    "MuranoModel",
    "UnsupportedModelError",
    "check_source_argument",
    "quiet_loading",
    "resolve_device",
    "resolve_dtype",
    "resolve_source",
]


class _ChooseBackend(type):
    """``MuranoModel(...)`` builds the chosen backend's subclass (``backend="auto"``: nnterp,
    falling back to plain nnsight where nnterp cannot read the model); a subclass called
    directly builds itself."""

    def __call__(cls, *args: Any, backend: str = "auto", **kwargs: Any) -> Any:
        if cls is not MuranoModel:
            return super().__call__(*args, backend=backend, **kwargs)
        return load_model(args, backend, kwargs)


class MuranoModel(metaclass=_ChooseBackend):
    """A language model behind one of the backends: ``MuranoModel(id_or_path, ...)``.

    Calling ``MuranoModel`` builds the chosen backend's subclass, so ``isinstance(model,
    MuranoModel)`` holds for every backend.

    Args:
        model_id_or_path: A Hugging Face hub id (``"gpt2"``) or a local folder in Hugging Face
            format. The nnsight backend also takes an ``nnsight.LanguageModel``.
        device: Where the weights live. Defaults to ``"cuda"`` when a GPU is there, else
            ``"cpu"``.
        dtype: ``torch.float32``, ``"bfloat16"``, ``"float16"``, ... or ``"auto"`` (the
            checkpoint's own dtype). Defaults to float32 on CPU (bfloat16 matmuls are hundreds
            of times slower than float32 on CPUs without AMX) and to ``"auto"`` elsewhere.
        backend: ``"nnterp"``, ``"nnsight"`` or ``"auto"``: nnterp where it imports with the
            installed nnsight and can read the model, else plain nnsight. ``backend_choice``
            says which was taken and why.
        self_check: Check once that the lens of the last layer equals the model's own output
            (one forward pass of a few tokens, at load or, for weights nnsight has not loaded
            yet, at the first trace). Leave it on: ``False`` turns a refusal into a warning,
            for a model you know better than the backend does.
        **kwargs: Passed on to the backend's loader (e.g. ``trust_remote_code``,
            ``revision``, which reach the tokenizer's load too; ``tokenizer=`` for one of your
            own, ``tokenizer_kwargs=`` for its options).

    Attributes:
        logit_transform: What the model does to ``lm_head``'s output, which the lens does too
            (a :class:`LogitTransform`).
        backend_choice: Which backend reads the model and why (``"nnterp"``, or e.g.
            ``"nnsight (auto: nnterp cannot rename it)"``).
        backend_fallback_reason: Why ``"auto"`` did not take nnterp, in full (nnterp's error,
            or that it is not installed or does not import with this nnsight), else ``None``.

    Raises:
        ValueError: For a ``backend`` or ``dtype`` that is not one of the allowed values.
        ImportError: For ``backend="nnterp"`` where nnterp is not installed or does not import
            with the installed nnsight (saying how to install it, or to use ``"nnsight"``).
        OSError: If ``model_id_or_path`` is neither a local folder nor a cached hub id and the
            hub cannot be reached. It is raised at once, without transformers' retries.
        UnsupportedModelError: If no backend can read the architecture (naming each reason).
        LensSelfCheckError: If the lens of the last layer does not equal the model's own output.
    """

    backend: ClassVar[str] = "base"

    name: str
    n_layers: int
    tokenizer: Any
    vocab_size: int
    device: torch.device
    context_length: int | None
    trained_length: int | None
    forward_kwargs: frozenset[str]
    logit_transform: LogitTransform
    backend_choice: str
    #: Largest probability difference the self-check accepts, by the unembedding's precision.
    #: The lens's path runs the model's own ops, so on a CPU the two agree exactly (measured:
    #: 0.0 on 13 tiny architectures, both backends, and the demo model); the margin is for
    #: accelerators whose kernels fuse differently, where half precision keeps about 3
    #: significant digits. Left-out transforms differ by 0.05 to 0.5.
    SELF_CHECK_TOLERANCE: ClassVar[dict[torch.dtype, float]] = {
        torch.float64: 1e-4,
        torch.float32: 1e-4,
        torch.bfloat16: 3e-2,
        torch.float16: 1e-2,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - subclasses
        raise TypeError("MuranoModel is built through a backend subclass")

    # -- what a backend provides ---------------------------------------------------------------

    def trace(self, inputs: dict[str, torch.Tensor], **kwargs: Any) -> Any:
        raise NotImplementedError

    def layer(self, index: int) -> Any:
        raise NotImplementedError

    def project_on_vocab(self, hidden: Any) -> Any:
        raise NotImplementedError

    # What reading inside a block needs (BlockBackend): every backend has these.

    @property
    def config(self) -> Any:
        """The Hugging Face config of the model."""
        raise NotImplementedError

    def block(self, index: int) -> Any:
        """Inside a trace: decoder block ``index``'s envoy (its sublayers by their own names)."""
        raise NotImplementedError

    def unembedding_weight(self) -> Any:
        """Inside a trace: ``lm_head``'s weight where the model runs (on NDIF, the server's)."""
        raise NotImplementedError

    @property
    def _root(self) -> Any:
        """The nnsight model (envoy) whose ``output.logits`` is the model's own output."""
        raise NotImplementedError

    def generate(self, inputs: dict[str, torch.Tensor], **generate_kwargs: Any) -> torch.Tensor:
        """Generates after ``inputs`` through nnsight's ``generate``.

        Args:
            inputs: ``input_ids`` and ``attention_mask``, ``[batch, prompt]``.
            **generate_kwargs: transformers' ``generate`` arguments (``max_new_tokens``,
                ``do_sample``, ...).

        Returns:
            The token ids, ``[batch, prompt + new]`` (prompt first).
        """
        # Here, not at the top: a remote trace sends the model to NDIF by value with the
        # globals its methods name, and this is the client's alone.
        from murano_widgets.generation import nnsight_generate

        return nnsight_generate(self._nnsight_model(), inputs, **generate_kwargs)

    def block_outputs(
        self, inputs: dict[str, torch.Tensor], layers: Any, **forward_kwargs: Any
    ) -> dict[int, torch.Tensor]:
        """Outside any trace: one forward pass of the plain Hugging Face model, keeping the
        outputs of decoder blocks ``layers`` (``{layer: [batch, seq, d_model]}``, the tensors
        :meth:`layer` gives inside a trace) through forward hooks, removed afterwards.

        The same tensors as a trace that saves ``layer(i)``, without what an nnsight 0.7 trace
        costs on each call (a worker thread, a hand-over between threads per saved module): on
        the demo model at 4 prompts × 10 tokens the trace cost 1.8 ms (nnsight backend) to
        2.3 ms (nnterp) of CPU time over this, against a 6.5-7.9 ms forward pass, and 4 to 6 ms
        of wall-clock time on a loaded machine, where each hand-over waits for a core. For
        local runs only; a remote run, or one that reads inside the blocks, takes a trace.

        Args:
            inputs: The model's batch (``input_ids``, ``attention_mask``, ...), on its device.
            layers: The blocks whose outputs to keep.
            **forward_kwargs: Passed on to the model's forward (``use_cache``, ...).
        """
        hf_model = self._hf_model  # the nnsight backend loads and checks the weights here
        blocks = self._blocks
        saved: dict[int, torch.Tensor] = {}

        def keeper(index: int) -> Callable[..., None]:
            def keep(_module: Any, _args: Any, output: Any) -> None:
                # transformers 5 blocks return a tensor; older ones a tuple, [0] the hidden state.
                saved[index] = output[0] if isinstance(output, tuple) else output

            return keep

        handles = [blocks[index].register_forward_hook(keeper(index)) for index in layers]
        try:
            hf_model(**inputs, **forward_kwargs)
        finally:
            for handle in handles:
                handle.remove()
        return saved

    def _nnsight_model(self) -> Any:
        """The nnsight model wrapper that generates (loaded and ready)."""
        raise NotImplementedError

    @property
    def _final_norm(self) -> torch.nn.Module:
        """The final norm as a plain module (outside any trace)."""
        raise NotImplementedError

    @property
    def _lm_head(self) -> torch.nn.Module:
        """The unembedding as a plain module (outside any trace)."""
        raise NotImplementedError

    @property
    def _head_weight(self) -> torch.Tensor:
        """:attr:`_lm_head`'s weight, ``[vocab, d_model]``: a tensor, which torch's typing of
        module attributes (``Tensor | Module``) cannot say."""
        weight = self._lm_head.weight
        assert isinstance(weight, torch.Tensor)
        return weight

    @property
    def _hf_model(self) -> torch.nn.Module:
        """The Hugging Face ``*ForCausalLM`` as a plain module, weights loaded (outside any
        trace): what :meth:`murano_widgets.JacobianLens.fit` runs forward and backward."""
        raise NotImplementedError

    @property
    def _blocks(self) -> list[torch.nn.Module]:
        """The decoder blocks of :attr:`_hf_model` as plain modules, first to last: block
        ``i``'s output is what :meth:`layer` gives inside a trace."""
        raise NotImplementedError

    # -- shared by every backend ---------------------------------------------------------------

    def _setup(
        self,
        name: str,
        tokenizer: Any,
        hf_model: torch.nn.Module,
        n_layers: int,
        self_check: bool = True,
    ) -> None:
        """Fills in the contract's attributes from the loaded tokenizer and Hugging Face model,
        then runs the self-check if the weights are loaded (else at the first trace)."""
        self.name = name
        self.tokenizer = tokenizer
        ensure_pad_token(tokenizer)
        self.n_layers = int(n_layers)
        self.vocab_size = int(self._head_weight.shape[0])
        # Cohere multiplies lm_head's output, Granite divides it, Gemma 2 soft-caps it: the
        # lens must do the same, or no layer of it (the last included) reads what the model does.
        self.logit_transform = logit_transform(hf_model)
        self.context_length, self.trained_length = position_limits(hf_model)
        self.forward_kwargs = forward_parameters(hf_model)
        self.backend_choice = self.backend
        self.backend_fallback_reason: str | None = None
        self._self_check_wanted = check_bool("self_check", self_check)
        self._self_checked = False
        if self._weights_loaded():
            self.self_check()

    @property
    def final_logit_softcapping(self) -> float | None:
        """The final soft-cap (``tanh(logits / c) * c``), or ``None``: part of
        :attr:`logit_transform`, kept by this name for code written before it."""
        return self.logit_transform.softcap

    def _weights_loaded(self) -> bool:
        """Whether the real weights are in memory (nnsight loads them lazily)."""
        return self._head_weight.device.type != "meta"

    def self_check(self, remote: bool = False) -> float:
        """Checks that the lens of the last layer equals the model's own output distribution.

        One trace of a few tokens: the last block's output through the lens's own in-trace path
        (final norm, unembedding, :attr:`logit_transform`) against the model's ``logits``.
        Runs once per model (at load, or at the first trace when nnsight loads the weights
        lazily; on NDIF for a model used only remotely).

        Args:
            remote: Run the probe on NDIF (for a model whose weights are not loaded here).

        Returns:
            The largest difference in probability over the probe's positions.

        Raises:
            LensSelfCheckError: If it exceeds :attr:`SELF_CHECK_TOLERANCE` for the
                unembedding's dtype (unless the model was built with ``self_check=False``,
                which warns instead).
        """
        return check_against_own_output(self, remote)

    def _ensure_self_checked(self, remote: bool) -> None:
        """Runs :meth:`self_check` before the first trace that needs it (lazy nnsight loads)."""
        if not self._self_checked:
            self.self_check(remote=remote)

    def _architecture(self) -> str:
        model_type = getattr(self.config, "model_type", None)
        classes = getattr(self.config, "architectures", None) or ["?"]
        return f"{classes[0]}, model_type {model_type!r}"

    def __repr__(self) -> str:
        transform = self.logit_transform.describe()
        return (
            f"MuranoModel({self.name!r}, backend={self.backend_choice!r}, "
            f"n_layers={self.n_layers}, vocab_size={self.vocab_size}, device={self.device}, "
            f"dtype={self.dtype}"
            + (f", logit_transform={transform!r}" if self.logit_transform else "")
            + ")"
        )

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the unembedding weights."""
        return self._head_weight.dtype

    def unembed(self, hidden: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Final norm then unembedding on plain tensors, outside any trace.

        Args:
            hidden: Hidden states ``[rows, d_model]``.
            out: A ``[rows, vocab]`` tensor to write the logits into (any float dtype); the
                matmul writes there directly when ``lm_head`` is a plain linear layer of the
                same dtype, which spares a fresh allocation per call.

        Returns:
            The logits: ``out`` when given.
        """
        normed = self._final_norm(hidden)
        head = self._lm_head
        if out is None:
            return self.finalize_logits(head(normed))
        if type(head) is torch.nn.Linear and head.weight.dtype == normed.dtype == out.dtype:
            torch.matmul(normed, head.weight.t(), out=out)
            if head.bias is not None:
                out.add_(head.bias)
        else:
            out.copy_(head(normed))
        return self.finalize_logits(out, in_place=True)

    def unembed_blocks(self, hidden: torch.Tensor, blocks: int, out: torch.Tensor) -> torch.Tensor:
        """:meth:`unembed` of ``blocks`` equal blocks of rows stacked in ``hidden`` (several
        layers' states at the same positions), into ``out``: the same numbers as one call per
        block. The final norm works row by row, so it runs once on all the rows (unless it
        holds a linear map, as OPT's does); the matmul runs once per block, since a matmul of
        a few rows may round differently from the same rows among more.

        Args:
            hidden: ``[blocks * rows, d_model]``.
            blocks: How many blocks of rows.
            out: ``[blocks * rows, vocab]``.

        Returns:
            ``out``.
        """
        rows = hidden.shape[0] // blocks
        norm = self._final_norm
        parts = [slice(block * rows, (block + 1) * rows) for block in range(blocks)]
        if any(isinstance(module, torch.nn.Linear) for module in norm.modules()):
            for part in parts:
                self.unembed(hidden[part], out=out[part])
            return out
        normed = norm(hidden)
        head = self._lm_head
        if type(head) is torch.nn.Linear and head.weight.dtype == normed.dtype == out.dtype:
            weight = head.weight.t()
            for part in parts:
                torch.matmul(normed[part], weight, out=out[part])
            if head.bias is not None:
                out.add_(head.bias)
        else:
            for part in parts:
                out[part].copy_(head(normed[part]))
        return self.finalize_logits(out, in_place=True)

    def finalize_logits(self, logits: Any, in_place: bool = False) -> Any:
        """What the model does to ``lm_head``'s output before its softmax
        (:attr:`logit_transform`: a scale, a divisor, soft-capping)."""
        return self.logit_transform(logits, in_place=in_place)
