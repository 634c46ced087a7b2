"""Model access: the ``ModelBackend`` protocol and ``MuranoModel``, its nnterp implementation."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlparse

import torch

__all__ = ["ModelBackend", "MuranoModel"]


@runtime_checkable
class ModelBackend(Protocol):
    """The model surface the pipeline steps use.

    Attributes:
        n_layers: The number of decoder blocks.
        tokenizer: A Hugging Face tokenizer with a pad token.
    """

    n_layers: int
    tokenizer: Any

    def trace(self, *inputs: Any, **kwargs: Any) -> Any:
        """Opens one nnsight tracing context on ``inputs``."""
        ...

    def layer(self, index: int) -> Any:
        """The output of decoder block ``index`` (the residual stream), inside a trace."""
        ...

    def project_on_vocab(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final norm then unembedding: hidden states ``[..., d_model]`` to logits."""
        ...


class MuranoModel:
    """A language model behind nnterp's ``StandardizedTransformer``.

    nnterp gives every supported architecture the same names (``layers_output[i]``,
    ``ln_final``, ``lm_head``), so the steps written against this class run on GPT-2, Llama,
    Qwen, Gemma, GPT-NeoX and the rest alike.

    Args:
        model_id_or_path: A Hugging Face hub id (``"gpt2"``) or a local folder in Hugging Face
            format.
        device: Where the weights live. Defaults to ``"cuda"`` when a GPU is there, else
            ``"cpu"``.
        dtype: The weights' dtype. Defaults to float32 on CPU (bfloat16 matmuls are hundreds of
            times slower than float32 on CPUs without AMX) and to the checkpoint's own dtype on
            a GPU.
        **kwargs: Passed on to ``StandardizedTransformer`` (e.g. ``trust_remote_code``).

    Raises:
        OSError: If ``model_id_or_path`` is neither a local folder nor a cached hub id and the
            hub cannot be reached. It is raised at once, without transformers' retries.
    """

    def __init__(
        self,
        model_id_or_path: str | os.PathLike[str],
        *,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
        **kwargs: Any,
    ) -> None:
        from nnterp import StandardizedTransformer

        if not isinstance(model_id_or_path, (str, os.PathLike)) or not str(model_id_or_path):
            raise TypeError(
                "model_id_or_path must be a hub id or a local folder path, "
                f"got {model_id_or_path!r}"
            )
        source = _resolve_source(model_id_or_path)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if dtype is None:
            dtype = torch.float32 if self.device.type == "cpu" else "auto"
        elif isinstance(dtype, str) and dtype != "auto":
            dtype = getattr(torch, dtype)
        kwargs.setdefault("device_map", str(self.device))
        self.name = str(model_id_or_path)
        self.nnterp = StandardizedTransformer(source, dtype=dtype, **kwargs)
        self.tokenizer = self.nnterp.tokenizer
        _ensure_pad_token(self.tokenizer)
        self.n_layers: int = int(self.nnterp.num_layers)
        config = self.nnterp.config
        self.vocab_size: int = int(self.nnterp.lm_head._module.weight.shape[0])
        # Gemma 2 squashes the logits with tanh(logits / cap) * cap after lm_head; the lens
        # must do the same, or its last layer would not match the model's own output.
        self.final_logit_softcapping: float | None = _text_config_value(
            config, "final_logit_softcapping"
        )

    def __repr__(self) -> str:
        return (
            f"MuranoModel({self.name!r}, n_layers={self.n_layers}, vocab_size={self.vocab_size}, "
            f"device={self.device}, dtype={self.dtype})"
        )

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the unembedding weights."""
        return self.nnterp.lm_head._module.weight.dtype

    @property
    def config(self) -> Any:
        """The Hugging Face config of the model."""
        return self.nnterp.config

    def trace(self, *inputs: Any, **kwargs: Any) -> Any:
        """Opens one nnsight tracing context (``remote=True`` runs it on NDIF)."""
        return self.nnterp.trace(*inputs, **kwargs)

    def layer(self, index: int) -> Any:
        """The output of decoder block ``index``, inside a trace (nnterp's ``layers_output``)."""
        return self.nnterp.layers_output[index]

    def project_on_vocab(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final norm then unembedding, inside a trace or on saved tensors after it."""
        logits = self.nnterp.lm_head(self.nnterp.ln_final(hidden))
        return self.finalize_logits(logits)

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
        normed = self.nnterp.ln_final._module(hidden)
        head = self.nnterp.lm_head._module
        if out is None:
            return self.finalize_logits(head(normed))
        if type(head) is torch.nn.Linear and head.weight.dtype == normed.dtype == out.dtype:
            torch.matmul(normed, head.weight.t(), out=out)
            if head.bias is not None:
                out.add_(head.bias)
        else:
            out.copy_(head(normed))
        return self.finalize_logits(out, in_place=True)

    def finalize_logits(self, logits: torch.Tensor, in_place: bool = False) -> torch.Tensor:
        """What the model does to ``lm_head``'s output before its softmax (soft-capping)."""
        if self.final_logit_softcapping:
            cap = float(self.final_logit_softcapping)
            if in_place:
                return logits.div_(cap).tanh_().mul_(cap)
            logits = torch.tanh(logits / cap) * cap
        return logits


def _text_config_value(config: Any, name: str) -> Any:
    value = getattr(config, name, None)
    if value is None and hasattr(config, "get_text_config"):
        value = getattr(config.get_text_config(), name, None)
    return value


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


def _resolve_source(model_id_or_path: str | os.PathLike[str]) -> str:
    """Returns what to load, failing at once when a hub id cannot be had."""
    path = Path(model_id_or_path).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise OSError(
                f"model_id_or_path {str(model_id_or_path)!r} is a folder without config.json: "
                "give a folder saved with save_pretrained (config.json, weights, tokenizer)"
            )
        return str(path)
    model_id = str(model_id_or_path)
    if isinstance(model_id_or_path, os.PathLike) or model_id.startswith((".", "/", "~")):
        raise OSError(f"model_id_or_path {model_id!r} is not an existing folder")
    if _is_cached(model_id):
        return model_id
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}
    if offline or not _hub_reachable():
        why = "HF_HUB_OFFLINE is set" if offline else "the Hugging Face hub cannot be reached"
        raise OSError(
            f"cannot load model {model_id!r}: it is not in the local Hugging Face cache and "
            f"{why}. Pass a local folder saved with save_pretrained instead, e.g. "
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
