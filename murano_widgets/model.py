"""Model access: the ``ModelBackend`` contract and ``MuranoModel``, the base of its backends.

The ``LogitLens`` step touches a model only through :class:`ModelBackend`. Two backends
implement it, both subclasses of :class:`MuranoModel`:

- ``backend="nnterp"`` (:mod:`murano_widgets.nnterp_backend`): nnterp's
  ``StandardizedTransformer``, one renaming layer over every architecture nnterp supports;
- ``backend="nnsight"`` (:mod:`murano_widgets.nnsight_backend`): plain nnsight, for nnsight
  versions nnterp does not work with (0.8, which NDIF's server requires).

To add a backend: subclass :class:`MuranoModel`; its ``__init__(self, model_id_or_path, *,
device=None, dtype=None, backend=..., **kwargs)`` loads the model (use :func:`resolve_source` and
:func:`resolve_dtype`, set ``self.device``, then call :meth:`MuranoModel._setup` once the
tokenizer and the Hugging Face model are there); implement ``trace``, ``layer``,
``project_on_vocab`` and the two plain modules ``_final_norm`` and ``_lm_head``; add it to
``_BACKENDS``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable
from urllib.parse import urlparse

import torch

__all__ = [
    "BACKENDS",
    "ModelBackend",
    "MuranoModel",
    "check_source_argument",
    "quiet_loading",
    "resolve_device",
    "resolve_dtype",
    "resolve_source",
]


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

    One more member is optional, and not part of the structural check (a backend without it
    still runs the lens): ``generate(inputs, **generate_kwargs) -> Tensor``, the token ids
    (``[batch, prompt + new]``) that transformers' ``generate`` arguments give after ``inputs``.
    ``show_logit_lens(..., generate=N)`` needs it. :class:`MuranoModel` has it for both
    backends, through nnsight's ``generate`` (0.7 and 0.8 alike:
    :func:`murano_widgets.generation.nnsight_generate`).
    """

    name: str
    n_layers: int
    tokenizer: Any
    vocab_size: int
    device: torch.device
    dtype: torch.dtype
    context_length: int | None
    trained_length: int | None
    forward_kwargs: frozenset[str]

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


BACKENDS = ("auto", "nnterp", "nnsight")
_BACKENDS = {
    "nnterp": ("murano_widgets.nnterp_backend", "NNterpModel"),
    "nnsight": ("murano_widgets.nnsight_backend", "NNsightModel"),
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


class MuranoModel:
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
        backend: ``"nnterp"``, ``"nnsight"`` or ``"auto"``: nnterp where it works with the
            installed nnsight, else plain nnsight.
        **kwargs: Passed on to the backend's loader (e.g. ``trust_remote_code``).

    Raises:
        ValueError: For a ``backend`` or ``dtype`` that is not one of the allowed values.
        OSError: If ``model_id_or_path`` is neither a local folder nor a cached hub id and the
            hub cannot be reached. It is raised at once, without transformers' retries.
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
    final_logit_softcapping: float | None

    def __new__(cls, *args: Any, backend: str = "auto", **kwargs: Any) -> MuranoModel:
        if cls is not MuranoModel:
            return super().__new__(cls)
        return super().__new__(_backend_class(backend))

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - subclasses
        raise TypeError("MuranoModel is built through a backend subclass")

    # -- what a backend provides ---------------------------------------------------------------

    def trace(self, inputs: dict[str, torch.Tensor], **kwargs: Any) -> Any:
        raise NotImplementedError

    def layer(self, index: int) -> Any:
        raise NotImplementedError

    def project_on_vocab(self, hidden: Any) -> Any:
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
        from .generation import nnsight_generate

        return nnsight_generate(self._nnsight_model(), inputs, **generate_kwargs)

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

    # -- shared by every backend ---------------------------------------------------------------

    def _setup(self, name: str, tokenizer: Any, hf_model: torch.nn.Module, n_layers: int) -> None:
        """Fills in the contract's attributes from the loaded tokenizer and Hugging Face model."""
        self.name = name
        self.tokenizer = tokenizer
        _ensure_pad_token(tokenizer)
        self.n_layers = int(n_layers)
        self.vocab_size = int(self._lm_head.weight.shape[0])
        config = hf_model.config
        # Gemma 2 squashes the logits with tanh(logits / cap) * cap after lm_head; the lens
        # must do the same, or its last layer would not match the model's own output.
        self.final_logit_softcapping = _text_config_value(config, "final_logit_softcapping")
        self.context_length, self.trained_length = _position_limits(hf_model)
        self.forward_kwargs = _forward_kwargs(hf_model)

    def __repr__(self) -> str:
        return (
            f"MuranoModel({self.name!r}, backend={self.backend!r}, n_layers={self.n_layers}, "
            f"vocab_size={self.vocab_size}, device={self.device}, dtype={self.dtype})"
        )

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the unembedding weights."""
        return self._lm_head.weight.dtype

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

    def finalize_logits(self, logits: Any, in_place: bool = False) -> Any:
        """What the model does to ``lm_head``'s output before its softmax (soft-capping)."""
        if self.final_logit_softcapping:
            cap = float(self.final_logit_softcapping)
            if in_place:
                return logits.div_(cap).tanh_().mul_(cap)
            logits = torch.tanh(logits / cap) * cap
        return logits


def _backend_class(backend: Any) -> type[MuranoModel]:
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}"
        )
    if backend == "auto":
        backend = "nnterp" if nnterp_works() else "nnsight"
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
