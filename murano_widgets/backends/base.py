"""Model access: the ``ModelBackend`` contract and ``MuranoModel``, the base of its backends.

The ``LogitLens`` step touches a model only through :class:`ModelBackend`. Two backends
implement it, both subclasses of :class:`MuranoModel`:

- ``backend="nnterp"`` (:mod:`murano_widgets.backends.nnterp`): nnterp's
  ``StandardizedTransformer``, one renaming layer over every architecture nnterp supports;
- ``backend="nnsight"`` (:mod:`murano_widgets.backends.nnsight`): plain nnsight, for nnsight
  versions nnterp does not work with (0.8, which NDIF's server requires).

To add a backend: subclass :class:`MuranoModel`; its ``__init__(self, model_id_or_path, *,
device=None, dtype=None, backend=..., **kwargs)`` loads the model (use :func:`resolve_source` and
:func:`resolve_dtype`, set ``self.device``, then call :meth:`MuranoModel._setup` once the
tokenizer and the Hugging Face model are there); implement ``trace``, ``layer``,
``project_on_vocab``, ``_root`` (the nnsight model whose ``output.logits`` is the model's own
output), the two plain modules ``_final_norm`` and ``_lm_head``, and the plain Hugging Face
model and its decoder blocks ``_hf_model`` and ``_blocks`` (what fitting a Jacobian lens
differentiates through); raise
:class:`UnsupportedModelError` for an architecture it cannot read; add it to ``_BACKENDS``.

Whatever the backend, the lens is only as right as its last step: what the model does to
``lm_head``'s output before its softmax (:class:`LogitTransform`, read once per model from
its :class:`~murano_widgets.backends.architectures.Architecture` and the config). Every model
is checked once against its own output (:meth:`MuranoModel.self_check`): the lens of the last
layer must equal the model's own distribution, or the model is refused with
:class:`LensSelfCheckError` rather than returning wrong numbers.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

import torch

from murano_widgets._checks import check_bool
from murano_widgets.backends.architectures import LOGIT_TRANSFORMS
from murano_widgets.backends.contract import ModelBackend

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


BACKENDS = ("auto", "nnterp", "nnsight")
_BACKENDS = {
    "nnterp": ("murano_widgets.backends.nnterp", "NNterpModel"),
    "nnsight": ("murano_widgets.backends.nnsight", "NNsightModel"),
}

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
}


class UnsupportedModelError(ValueError):
    """A backend cannot read this architecture (nnterp cannot rename it, or the nnsight backend
    has no layout for it). ``backend="auto"`` then tries the other backend."""


class LensSelfCheckError(RuntimeError):
    """The lens of the model's last layer does not equal the model's own output distribution.

    Raised instead of returning numbers: a lens that cannot reproduce the model's own output
    would be wrong at every layer. It means the model does something after its final norm and
    unembedding that the backend does not know (see
    :data:`~murano_widgets.backends.architectures.ARCHITECTURES`).

    Attributes:
        model_type: The Hugging Face ``config.model_type``.
        max_abs_diff: The largest difference in probability on the probe.
    """

    def __init__(self, message: str, model_type: str | None, max_abs_diff: float) -> None:
        super().__init__(message)
        self.model_type = model_type
        self.max_abs_diff = max_abs_diff


class LogitTransform:
    """What a model does to ``lm_head``'s output before its softmax, applied in this order.

    A plain class, not a dataclass: a remote trace sends this package's code by value, and a
    dataclass cannot be rebuilt there (its string annotations need its module in
    ``sys.modules``).

    Attributes:
        multiply: A factor on the logits (Cohere's ``logit_scale``), or ``None``.
        divide: A divisor of the logits (Granite's ``logits_scaling``), or ``None``. Kept apart
            from ``multiply`` so that the lens divides exactly as the model does.
        softcap: ``c`` in ``tanh(logits / c) * c`` (Gemma 2 and 3's final soft-capping), or
            ``None``.
    """

    __slots__ = ("divide", "multiply", "softcap")

    def __init__(
        self,
        multiply: float | None = None,
        divide: float | None = None,
        softcap: float | None = None,
    ) -> None:
        self.multiply, self.divide, self.softcap = multiply, divide, softcap

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LogitTransform) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return (
            f"LogitTransform(multiply={self.multiply!r}, divide={self.divide!r}, "
            f"softcap={self.softcap!r})"
        )

    def _values(self) -> tuple[float | None, ...]:
        return (self.multiply, self.divide, self.softcap)

    def __bool__(self) -> bool:
        return any(value is not None for value in self._values())

    def __call__(self, logits: Any, in_place: bool = False) -> Any:
        """``logits`` transformed (in place when asked: the lens's chunk buffers)."""
        if self.multiply is not None:
            logits = logits.mul_(self.multiply) if in_place else logits * self.multiply
            in_place = True  # a fresh tensor now, ours to change
        if self.divide is not None:
            logits = logits.div_(self.divide) if in_place else logits / self.divide
            in_place = True
        if self.softcap is not None:
            cap = self.softcap
            logits = (
                logits.div_(cap).tanh_().mul_(cap) if in_place else torch.tanh(logits / cap) * cap
            )
        return logits

    def describe(self) -> str:
        """The transform in words, for reprs, provenance and errors ("none" when there is none)."""
        parts = []
        if self.multiply is not None:
            parts.append(f"logits × {self.multiply:g}")
        if self.divide is not None:
            parts.append(f"logits ÷ {self.divide:g}")
        if self.softcap is not None:
            parts.append(f"tanh soft-cap at {self.softcap:g}")
        return ", then ".join(parts) or "none"


def logit_transform(hf_model: torch.nn.Module) -> LogitTransform:
    """The :class:`LogitTransform` of a loaded Hugging Face causal LM, from its type and config.

    Raises:
        UnsupportedModelError: If the table names an attribute the config does not hold as a
            positive number (the lens would otherwise leave the transform out).
    """
    config = getattr(hf_model, "config", None)
    model_type = getattr(config, "model_type", None)
    values: dict[str, float | None] = {"multiply": None, "divide": None}
    if model_type in LOGIT_TRANSFORMS:
        operation, attribute = LOGIT_TRANSFORMS[model_type]
        # The model's own attribute first (Cohere keeps its logit_scale on the module).
        value = getattr(hf_model, attribute, None)
        if value is None:
            value = _text_config_value(config, attribute)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise UnsupportedModelError(
                f"{type(hf_model).__name__} (model_type {model_type!r}) {operation}s its logits "
                f"by config.{attribute}, which is {value!r}, not a positive number"
            )
        if value != 1:
            values[operation] = float(value)
    cap = _text_config_value(config, "final_logit_softcapping")
    return LogitTransform(
        multiply=values["multiply"], divide=values["divide"], softcap=float(cap) if cap else None
    )


class _ChooseBackend(type):
    """``MuranoModel(...)`` builds the chosen backend's subclass (``backend="auto"``: nnterp,
    falling back to plain nnsight where nnterp cannot read the model); a subclass called
    directly builds itself."""

    def __call__(cls, *args: Any, backend: str = "auto", **kwargs: Any) -> Any:
        if cls is not MuranoModel:
            return super().__call__(*args, backend=backend, **kwargs)
        return _load(args, backend, kwargs)


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
        **kwargs: Passed on to the backend's loader (e.g. ``trust_remote_code``).

    Attributes:
        logit_transform: What the model does to ``lm_head``'s output, which the lens does too
            (a :class:`LogitTransform`).
        backend_choice: Which backend reads the model and why (``"nnterp"``, or e.g.
            ``"nnsight (auto: nnterp cannot rename it)"``).
        backend_fallback_reason: nnterp's error in full when ``"auto"`` fell back, else ``None``.

    Raises:
        ValueError: For a ``backend`` or ``dtype`` that is not one of the allowed values.
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
        _ensure_pad_token(tokenizer)
        self.n_layers = int(n_layers)
        self.vocab_size = int(self._head_weight.shape[0])
        # Cohere multiplies lm_head's output, Granite divides it, Gemma 2 soft-caps it: the
        # lens must do the same, or no layer of it (the last included) reads what the model does.
        self.logit_transform = logit_transform(hf_model)
        self.context_length, self.trained_length = _position_limits(hf_model)
        self.forward_kwargs = _forward_kwargs(hf_model)
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
        import nnsight

        self._self_checked = True  # first: the probe's own trace must not check again
        try:
            probe = _probe_inputs(self.tokenizer, self.vocab_size)
            kwargs: dict[str, Any] = {"remote": True} if remote else {}
            if "use_cache" in self.forward_kwargs:
                kwargs["use_cache"] = False
            # no_grad, not inference_mode: nnsight may run the intervention in another thread,
            # where inference tensors could not meet weights that require grad.
            with torch.no_grad(), self.trace(probe, **kwargs):
                lens_logits = nnsight.save(self.project_on_vocab(self.layer(self.n_layers - 1)))
                own_logits = nnsight.save(self._root.output.logits)
            lens_p = torch.as_tensor(lens_logits).detach().float().softmax(-1)
            own_p = torch.as_tensor(own_logits).detach().float().softmax(-1)
        except BaseException:
            self._self_checked = False
            raise
        diff = _max_difference(lens_p, own_p)
        tolerance = self.SELF_CHECK_TOLERANCE.get(self.dtype, 1e-2)
        if not diff <= tolerance:  # NaN fails too
            model_type = getattr(self.config, "model_type", None)
            agree = int((lens_p.argmax(-1) == own_p.argmax(-1)).sum())
            message = (
                f"the lens of the last layer of {self.name!r} ({self._architecture()}) does not "
                f"equal the model's own output: the probabilities differ by up to {diff:.3g} "
                f"(tolerance {tolerance:g} for {str(self.dtype).replace('torch.', '')}; "
                f"top-1 agrees at {agree} of {own_p.shape[-2]} probe positions) with "
                f"backend {self.backend_choice!r} and logit transform "
                f"{self.logit_transform.describe()!r}. The model changes its logits after the "
                "final norm and lm_head in a way this backend does not know, so every layer's "
                "lens would be wrong: refusing to return numbers. Known transforms: "
                "murano_widgets.backends.architectures.ARCHITECTURES; "
                "MuranoModel(..., self_check=False) "
                "turns this into a warning."
            )
            if self._self_check_wanted:
                self._self_checked = False
                raise LensSelfCheckError(message, model_type, diff)
            import warnings

            warnings.warn(message, RuntimeWarning, stacklevel=2)
        return diff

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


def _max_difference(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """The largest difference between two distributions, where a position the model itself
    makes non-finite must be non-finite in the lens too (a NaN in the weights is the model's,
    and the step shows such cells as missing): ``inf`` if the two disagree on which."""
    ours_bad, theirs_bad = ~torch.isfinite(ours), ~torch.isfinite(theirs)
    if not torch.equal(ours_bad, theirs_bad):
        return float("inf")
    finite = ~ours_bad
    return float((ours[finite] - theirs[finite]).abs().max()) if finite.any() else 0.0


def _probe_inputs(tokenizer: Any, vocab_size: int) -> dict[str, torch.Tensor]:
    """A few tokens to check the lens on: a short sentence, or the first ids if it encodes to
    fewer than two tokens (a tokenizer without those characters)."""
    ids = tokenizer("The lens checks itself against the model.", add_special_tokens=True).get(
        "input_ids", []
    )
    ids = [int(i) for i in ids if 0 <= int(i) < vocab_size][:8]
    if len(ids) < 2:
        ids = list(range(min(8, vocab_size)))
    input_ids = torch.tensor([ids])
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}


def _load(args: tuple[Any, ...], backend: Any, kwargs: dict[str, Any]) -> MuranoModel:
    """``MuranoModel(*args, backend=backend, **kwargs)``: the backend chosen, or for ``"auto"``
    nnterp with a fall back to plain nnsight where nnterp cannot read the model.

    Raises:
        UnsupportedModelError: If neither backend can read it, naming both reasons.
    """
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}"
        )
    if backend != "auto":
        return _backend_class(backend)(*args, backend=backend, **kwargs)
    from murano_widgets._checks import is_nnsight_model

    # Through the registry, not an import: the backends import this module.
    NNsightModel: Any = _backend_class("nnsight")

    if (args and is_nnsight_model(args[0])) or "layout" in kwargs:
        why = "an nnsight model" if args and is_nnsight_model(args[0]) else "layout= given"
        return _with_choice(lambda: NNsightModel(*args, **kwargs), f"nnsight (auto: {why})")
    if not nnterp_works():
        return _with_choice(
            lambda: NNsightModel(*args, **kwargs),
            "nnsight (auto: nnterp does not import with this nnsight)",
        )
    try:
        return _backend_class("nnterp")(*args, backend="nnterp", **kwargs)
    except (UnsupportedModelError, LensSelfCheckError) as nnterp_error:
        reason = _one_line(nnterp_error)
        short = (
            "nnterp failed the self-check"
            if isinstance(nnterp_error, LensSelfCheckError)
            else "nnterp cannot rename it"
        )
        try:
            # Loaded now, as nnterp would have, so that its self-check runs here too.
            model = _with_choice(
                lambda: NNsightModel(*args, **kwargs)._loaded(), f"nnsight (auto: {short})"
            )
            model.backend_fallback_reason = reason
            return model
        except (UnsupportedModelError, LensSelfCheckError) as nnsight_error:
            raise UnsupportedModelError(
                f"neither backend can read model_id_or_path {str(args[0]) if args else ''!r}: "
                f"nnterp: {reason}; nnsight: {_one_line(nnsight_error)}"
            ) from nnsight_error


def _with_choice(build: Callable[[], MuranoModel], choice: str) -> MuranoModel:
    """Builds a model and records why its backend was chosen."""
    model = build()
    model.backend_choice = choice
    return model


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}{'…' if len(text) > 300 else ''}"


def _backend_class(backend: str) -> type[MuranoModel]:
    module, name = _BACKENDS[backend]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise ImportError(
            f"backend={backend!r} cannot be used here: {error}. "
            + (
                "nnterp 1.3 needs nnsight below 0.8 (pip install 'murano-widgets[nnterp]'); "
                "backend='nnsight' works with any nnsight."
                if backend == "nnterp"
                else ""
            )
        ) from error


def nnterp_works() -> bool:
    """Whether nnterp imports with the installed nnsight (nnterp 1.3 fails on nnsight 0.8)."""
    try:
        importlib.import_module("nnterp")
    except Exception:  # ImportError, or nnterp's own errors against a newer nnsight
        return False
    return True


def resolve_device(device: Any) -> torch.device:
    """``device`` as a ``torch.device``: CUDA when present and none is given, else the CPU.

    Raises:
        ValueError: For something that is not a device name, or a GPU that is not there.
    """
    try:
        resolved = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    except (RuntimeError, TypeError) as error:
        raise ValueError(
            f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1'; got {device!r}"
        ) from error
    if resolved.type == "meta":
        raise ValueError(
            f"device {device!r} holds no weights, so the model could not run; "
            "use device='cpu' or 'cuda'"
        )
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device {device!r} is not available: this torch sees no CUDA GPU "
            f"(torch {torch.__version__}); use device='cpu'"
        )
    if resolved.type == "cuda" and (resolved.index or 0) >= torch.cuda.device_count():
        raise ValueError(
            f"device {device!r} is not available: there are {torch.cuda.device_count()} CUDA "
            "GPUs (cuda:0 ...)"
        )
    return resolved


def resolve_dtype(dtype: Any, device: torch.device, source: str | None) -> torch.dtype:
    """The torch dtype to load with: ``None`` and ``"auto"`` resolved, names checked.

    ``"auto"`` is read from the checkpoint's ``config.json`` here, because nnsight's meta load
    takes ``getattr(torch, dtype)`` and has no "auto".

    Raises:
        ValueError: For a name that is not a floating dtype.
    """
    if dtype is None:
        dtype = torch.float32 if device.type == "cpu" else "auto"
    if isinstance(dtype, torch.dtype):
        if not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating-point dtype, got {dtype}")
        return dtype
    if isinstance(dtype, str):
        if dtype == "auto":
            return _checkpoint_dtype(source) or torch.float32
        key = dtype.removeprefix("torch.").lower()
        if key in _DTYPES:
            return _DTYPES[key]
    raise ValueError(
        f"dtype must be a torch dtype, 'auto' or one of {', '.join(map(repr, _DTYPES))}; "
        f"got {dtype!r}"
    )


def _checkpoint_dtype(source: str | None) -> torch.dtype | None:
    """The dtype a checkpoint was saved in, from its config (``dtype`` or ``torch_dtype``)."""
    if source is None:
        return None
    config: dict[str, Any] = {}
    path = Path(source) / "config.json"
    try:
        if path.is_file():
            config = json.loads(path.read_text())
        else:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(source, "config.json")
            if isinstance(cached, str):
                config = json.loads(Path(cached).read_text())
    except (OSError, ValueError):
        return None
    for holder in (config, config.get("text_config") or {}):
        name = holder.get("dtype") or holder.get("torch_dtype")
        if isinstance(name, str) and name.lower() in _DTYPES:
            return _DTYPES[name.lower()]
    return None


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Hides transformers' "Loading weights" bar, which would otherwise print into the notebook
    cell of the first lens call (nnsight loads the real weights lazily)."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _text_config_value(config: Any, name: str) -> Any:
    value = getattr(config, name, None)
    if value is None and hasattr(config, "get_text_config"):
        value = getattr(config.get_text_config(), name, None)
    return value


# Learned tables of absolute positions, by the names transformers gives them (GPT-2, GPT-Neo,
# GPTBigCode: wpe; OPT, BioGPT, XGLM: embed_positions). A prompt beyond the table fails inside
# the model with an IndexError, or silently reads garbage.
_POSITION_TABLES = ("wpe", "embed_positions", "position_embeddings")
_TRAINED_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def _position_limits(hf_model: torch.nn.Module) -> tuple[int | None, int | None]:
    """(hard context length, trained length): the first for absolute positions, else the second."""
    base = getattr(hf_model, "base_model", hf_model)
    for path, table in base.named_modules():
        # Top-level or one level down (OPT keeps it in model.decoder), never inside a block.
        name = path.rsplit(".", 1)[-1]
        if (
            path.count(".") <= 1
            and name in _POSITION_TABLES
            and isinstance(table, torch.nn.Embedding)
        ):
            # OPT's table starts its positions at an offset of 2.
            return int(table.num_embeddings) - int(getattr(table, "offset", 0)), None
    config = getattr(hf_model, "config", None)
    for key in _TRAINED_LENGTH_KEYS:
        value = _text_config_value(config, key)
        if isinstance(value, int) and value > 0:
            return None, value
    return None, None


def _forward_kwargs(hf_model: torch.nn.Module) -> frozenset[str]:
    try:
        return frozenset(inspect.signature(hf_model.forward).parameters)
    except (TypeError, ValueError):
        return frozenset()


def _ensure_pad_token(tokenizer: Any) -> None:
    """Batching needs a pad token; padded positions are masked, so its identity is moot."""
    if tokenizer.pad_token is not None:
        return
    for fallback in (tokenizer.eos_token, tokenizer.bos_token, tokenizer.unk_token):
        if fallback is not None:
            tokenizer.pad_token = fallback
            return
    raise ValueError(
        "the tokenizer has no pad, eos, bos or unk token to pad batches with; "
        "set tokenizer.pad_token before building the model"
    )


def check_source_argument(model_id_or_path: Any) -> None:
    """Raises TypeError unless ``model_id_or_path`` is a non-empty string or path."""
    if not isinstance(model_id_or_path, (str, os.PathLike)) or not str(model_id_or_path):
        raise TypeError(
            "model_id_or_path must be a hub id or a local folder path, "
            f"got {type(model_id_or_path).__name__} {model_id_or_path!r}"
        )


def resolve_source(
    model_id_or_path: str | os.PathLike[str], argument: str = "model_id_or_path"
) -> str:
    """Returns what to load, failing at once when a hub id cannot be had.

    Args:
        model_id_or_path: A hub id or a local folder.
        argument: The argument's name in error messages (the CLI says ``--model``).

    Raises:
        OSError: For a folder without ``config.json``, a path that does not exist, or a hub id
            that is neither cached nor reachable.
    """
    path = Path(model_id_or_path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise OSError(
                f"{argument} {str(model_id_or_path)!r} is a folder without config.json: "
                "give a folder saved with save_pretrained (config.json, weights, tokenizer)"
            )
        return str(path)
    model_id = str(model_id_or_path)
    if isinstance(model_id_or_path, os.PathLike) or model_id.startswith((".", "/", "~")):
        raise OSError(f"{argument} {model_id!r} is not an existing folder")
    if _is_cached(model_id):
        return model_id
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}
    if offline or not _hub_reachable():
        why = "HF_HUB_OFFLINE is set" if offline else "the Hugging Face hub cannot be reached"
        raise OSError(
            f"{argument}: cannot load model {model_id!r}: it is not in the local Hugging Face "
            f"cache and {why}. Pass a local folder saved with save_pretrained instead, e.g. "
            "MuranoModel('/path/to/model'), or use murano_widgets.load_demo_model(), "
            "which ships with the package."
        )
    return model_id


def _is_cached(model_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model_id, "config.json")
    except Exception:  # an id that is not a valid repo name is simply not cached
        return False
    return isinstance(found, str)


def _hub_reachable(timeout: float = 3.0) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
