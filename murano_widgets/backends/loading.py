"""Loading a model: from a hub id or a folder, its device and dtype, the backend chosen.

``MuranoModel(...)`` comes here (:func:`load_model`): the backend asked for, or ``backend="auto"``'s
choice (nnterp, falling back to plain nnsight where nnterp cannot read the model), each built
through ``_BACKENDS`` (the backends import :mod:`murano_widgets.backends.base`, so it cannot
import them). What a backend's ``__init__`` shares: :func:`resolve_source` (a hub id that
cannot be had fails at once), :func:`resolve_device`, :func:`resolve_dtype`,
:func:`quiet_loading`, and what :meth:`MuranoModel._setup` reads off the loaded model.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import torch

from murano_widgets._checks import is_nnsight_model
from murano_widgets.backends.architectures import UnsupportedModelError, text_config_value
from murano_widgets.backends.self_check import LensSelfCheckError

if TYPE_CHECKING:
    from murano_widgets.backends.base import MuranoModel

__all__ = [
    "BACKENDS",
    "NNTERP_EXTRA",
    "check_source_argument",
    "nnterp_problem",
    "nnterp_works",
    "quiet_loading",
    "require_nnterp",
    "resolve_device",
    "resolve_dtype",
    "resolve_source",
    "with_tokenizer",
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


def load_model(args: tuple[Any, ...], backend: Any, kwargs: dict[str, Any]) -> MuranoModel:
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
    # Through the registry, not an import: the backends import this module.
    NNsightModel: Any = _backend_class("nnsight")

    if (args and is_nnsight_model(args[0])) or "layout" in kwargs:
        why = "an nnsight model" if args and is_nnsight_model(args[0]) else "layout= given"
        return _with_choice(lambda: NNsightModel(*args, **kwargs), f"nnsight (auto: {why})")
    problem = nnterp_problem()
    if problem is not None:
        model = _with_choice(lambda: NNsightModel(*args, **kwargs), f"nnsight (auto: {problem})")
        model.backend_fallback_reason = nnterp_problem(detail=True)
        return model
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
    if backend == "nnterp":
        require_nnterp()
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise ImportError(f"backend={backend!r} cannot be used here: {error}") from error


#: The extra that installs nnterp, and what it costs: said wherever nnterp is missing.
NNTERP_EXTRA = "murano-widgets[nnterp-local]"


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def nnterp_problem(detail: bool = False) -> str | None:
    """Why nnterp cannot be used here, or ``None`` where it imports.

    Two cases, said apart: nnterp is not installed (the package's base install, with
    nnsight 0.8 for NDIF), or it is installed but does not import with the installed nnsight
    (nnterp 1.3 fails on nnsight 0.8: ``nnsight.intervention.tracing`` is gone).

    Args:
        detail: Add the import's own error to the second case.
    """
    if importlib.util.find_spec("nnterp") is None:
        return "nnterp is not installed"
    try:
        importlib.import_module("nnterp")
    except Exception as error:  # ImportError, or nnterp's own errors against a newer nnsight
        why = f"nnterp {_installed('nnterp')} does not import with nnsight {_installed('nnsight')}"
        return f"{why} ({_one_line(error)})" if detail else why
    return None


def nnterp_works() -> bool:
    """Whether nnterp imports with the installed nnsight (nnterp 1.3 fails on nnsight 0.8)."""
    return nnterp_problem() is None


def require_nnterp() -> None:
    """Raises ImportError, saying what happened and both ways on, unless nnterp imports.

    Raises:
        ImportError: For nnterp not installed, or installed but broken with this nnsight.
    """
    problem = nnterp_problem(detail=True)
    if problem is None:
        return
    nnsight = _installed("nnsight")
    raise ImportError(
        f"backend='nnterp' cannot be used here: {problem}. nnterp 1.3 needs nnsight below 0.8: "
        f"pip install '{NNTERP_EXTRA}' installs both (nnsight 0.7, which NDIF's server "
        "refuses: remote=True then stops working). Or use backend='nnsight', which reads the "
        f"same models with the installed nnsight{f' {nnsight}' if nnsight else ''}"
        " and runs on NDIF with nnsight 0.8."
    )


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


# Learned tables of absolute positions, by the names transformers gives them (GPT-2, GPT-Neo,
# GPTBigCode: wpe; OPT, BioGPT, XGLM: embed_positions). A prompt beyond the table fails inside
# the model with an IndexError, or silently reads garbage.
_POSITION_TABLES = ("wpe", "embed_positions", "position_embeddings")
_TRAINED_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")


def position_limits(hf_model: torch.nn.Module) -> tuple[int | None, int | None]:
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
        value = text_config_value(config, key)
        if isinstance(value, int) and value > 0:
            return None, value
    return None, None


def forward_parameters(hf_model: torch.nn.Module) -> frozenset[str]:
    """The names the model's ``forward`` takes (empty if its signature cannot be read), so a
    backend passes only the keyword arguments a model accepts."""
    try:
        return frozenset(inspect.signature(hf_model.forward).parameters)
    except (TypeError, ValueError):
        return frozenset()


#: The loading options that concern the tokenizer as well as the weights: the tokenizer is
#: loaded with them from the same place, at the same revision, trusting the same code.
_TOKENIZER_OPTIONS = ("revision", "trust_remote_code", "token", "cache_dir", "local_files_only")


def with_tokenizer(source: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` for nnsight's (or nnterp's) loader, with the tokenizer given explicitly.

    nnsight 0.8's meta load otherwise asks transformers' text-generation pipeline whether the
    task loads a tokenizer; from transformers 5.23 the pipeline registry records its class as
    a string, nnsight reads False, and it loads none ("Impossible to guess which tokenizer to
    use"). A tokenizer given explicitly is used as it is by every nnsight (0.7's
    ``LanguageModel``, 0.8's ``TransformersModel``) and by nnterp, locally and for NDIF (whose
    server uses its own tokenizer; the client's is only referred to by name).

    Args:
        source: What to load: a hub id or a local folder (from :func:`resolve_source`).
        kwargs: The user's loading options. A ``tokenizer`` there is used as given;
            ``tokenizer_kwargs`` (nnsight 0.7's and nnterp's option) go to the tokenizer's
            load; ``revision``, ``trust_remote_code``, ``token``, ... go to both loads.

    Returns:
        A new dict: ``kwargs`` less ``tokenizer_kwargs``, with ``tokenizer`` set.
    """
    kwargs = dict(kwargs)
    options = dict(kwargs.pop("tokenizer_kwargs", None) or {})
    if kwargs.get("tokenizer") is None:
        from transformers import AutoTokenizer

        for name in _TOKENIZER_OPTIONS:
            if name in kwargs:
                options.setdefault(name, kwargs[name])
        # Left padding, as nnsight sets it when it loads the tokenizer itself: a batch's last
        # real tokens then line up at the right edge.
        options.setdefault("padding_side", "left")
        kwargs["tokenizer"] = AutoTokenizer.from_pretrained(source, **options)
    return kwargs


def ensure_pad_token(tokenizer: Any) -> None:
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
    if offline or not hub_reachable():
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


def hub_reachable(timeout: float = 3.0) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
