"""Every architecture the package knows: one record per Hugging Face ``config.model_type``.

A lens is exact on an architecture only if three things about it are right, and each used to
live in a table of its own in another folder. They are one :class:`Architecture` here:

- ``layout``: where the decoder blocks, the final norm and the unembedding are in the
  ``*ForCausalLM`` module (:class:`Layout`). The nnsight backend reads it; nnterp renames the
  modules itself, so an architecture only nnterp loads has none.
- ``logits``: what the model does to ``lm_head``'s output before its softmax, as (operation,
  config attribute), read from each ``*ForCausalLM.forward`` in transformers 5.22. Every
  backend applies it (:func:`logit_transform`, below), and the self-check
  refuses a model that transforms its logits in a way missing here. The same attribute name can
  mean opposite things (Granite divides by ``logits_scaling``, HyperCLOVA X multiplies by it),
  so the record goes by model type, never by attribute name alone. Final soft-capping
  (``final_logit_softcapping``) is read from any config: it means the same everywhere.
- ``sublayers``: where a block's attention and MLP meet (:class:`Sublayers`), for ``resid_mid``
  rows and ``decompose=True``
  (:func:`murano_widgets.attribution.sublayers.sublayers_of` adds the variants a config
  selects).

plus a ``title`` for messages.

To support an architecture: add one :class:`Architecture` to :data:`ARCHITECTURES`. The code
reads the views below it (:data:`LAYOUTS`, :data:`LOGIT_TRANSFORMS`, :data:`SUBLAYERS`,
:data:`TITLES`), made from it once at import: a remote trace sends this package's code to NDIF
by value with the globals it names, so what runs there names only a view of plain objects of
one kind. The classes here are plain classes, not dataclasses, for the same reason: a
dataclass cannot be rebuilt there (measured: ``remote="local"``'s dry run failed rebuilding
``Layout`` as a dataclass in this module, ``'NoneType' object has no attribute '__dict__'``).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = [
    "ARCHITECTURES",
    "LAYOUTS",
    "LOGIT_TRANSFORMS",
    "SUBLAYERS",
    "TITLES",
    "Architecture",
    "Layout",
    "LogitTransform",
    "Sublayers",
    "UnsupportedModelError",
]


class Layout:
    """Where an architecture keeps the parts the lens reads, as dotted attribute paths from
    the ``*ForCausalLM`` module.

    Attributes:
        blocks: The ``ModuleList`` of decoder blocks (their outputs are the residual stream).
        norm: The final norm, applied before the unembedding; ``None`` when there is none.
        lm_head: The unembedding.
        between: Modules applied after the norm and before the unembedding, in order (OPT's
            ``project_out`` when its embedding width differs from the hidden width). A path
            whose module is ``None`` in a given checkpoint is skipped.

    A path may list alternatives, ``"lm_head|embed_out"``: the first the model has is used
    (names change between transformers versions). Two layouts with the same paths are equal.
    """

    __slots__ = ("between", "blocks", "lm_head", "norm")

    def __init__(
        self, blocks: str, norm: str | None, lm_head: str, between: tuple[str, ...] = ()
    ) -> None:
        self.blocks, self.norm, self.lm_head = blocks, norm, lm_head
        self.between = tuple(between)

    def _paths(self) -> tuple[Any, ...]:
        return (self.blocks, self.norm, self.lm_head, self.between)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._paths() == other._paths()

    def __hash__(self) -> int:
        return hash(self._paths())

    def __repr__(self) -> str:
        return (
            f"Layout(blocks={self.blocks!r}, norm={self.norm!r}, lm_head={self.lm_head!r}, "
            f"between={self.between!r})"
        )


class Sublayers:
    """The sublayer points of one architecture, as dotted paths inside a decoder block.

    Attributes:
        mid: The module whose input is the residual stream after the attention (the norm that
            starts the MLP half, or the MLP itself in a post-norm block), or ``None`` for a
            parallel block.
        attention: The attention module, whose output's first element is the attention term of
            a parallel block.
        out_proj: The attention's output projection (heads: its input is the heads' outputs
            side by side).
        post_norm: A norm applied to the attention's output before it joins the stream, or
            ``None``.
        conv1d: The projection is a GPT-2 ``Conv1D`` (weight ``[in, out]``) rather than a
            ``Linear`` (weight ``[out, in]``).
        multiplier: The config attribute that scales each sublayer's output before it joins the
            stream (Granite's ``residual_multiplier``), or ``None``.
        parallel_flag: For architectures that can be either: the config attribute that makes
            the block parallel when true (GPT-NeoX's ``use_parallel_residual``).
    """

    __slots__ = (
        "attention",
        "conv1d",
        "mid",
        "multiplier",
        "out_proj",
        "parallel_flag",
        "post_norm",
    )

    def __init__(
        self,
        mid: str | None,
        attention: str,
        out_proj: str,
        post_norm: str | None = None,
        conv1d: bool = False,
        multiplier: str | None = None,
        parallel_flag: str | None = None,
    ) -> None:
        self.mid, self.attention, self.out_proj = mid, attention, out_proj
        self.post_norm, self.conv1d, self.multiplier = post_norm, conv1d, multiplier
        self.parallel_flag = parallel_flag

    def parallel(self, config: Any) -> bool:
        """Whether blocks of a model with ``config`` run attention and MLP side by side."""
        if self.parallel_flag is not None:
            return bool(getattr(config, self.parallel_flag, False))
        return self.mid is None


class Architecture:
    """What the package knows about one ``config.model_type``.

    Attributes:
        title: The architecture's name in messages ("GPT-NeoX").
        layout: Where its blocks, final norm and unembedding are, for the nnsight backend;
            ``None`` where only nnterp (which renames them itself) loads it.
        sublayers: Where its blocks' attention and MLP meet, or ``None`` where unknown
            (``resid_mid`` rows and ``decompose=True`` are then refused).
        logits: What the model does to its logits after ``lm_head``: ``("multiply" |
            "divide", config attribute)``, or ``None`` for nothing (soft-capping apart).
    """

    __slots__ = ("layout", "logits", "sublayers", "title")

    def __init__(
        self,
        title: str,
        layout: Layout | None = None,
        sublayers: Sublayers | None = None,
        logits: tuple[str, str] | None = None,
    ) -> None:
        self.title, self.layout, self.sublayers, self.logits = title, layout, sublayers, logits


_GPT2_LIKE = Layout("transformer.h", "transformer.ln_f", "lm_head")
_LLAMA_LIKE = Layout("model.layers", "model.norm", "lm_head")

_LLAMA_SUB = Sublayers("post_attention_layernorm", "self_attn", "self_attn.o_proj")
_POST_NORMED = Sublayers(
    "pre_feedforward_layernorm",
    "self_attn",
    "self_attn.o_proj",
    post_norm="post_attention_layernorm",
)
_PARALLEL_SUB = Sublayers(None, "self_attn", "self_attn.o_proj")
_GRANITE_SUB = Sublayers(
    "post_attention_layernorm", "self_attn", "self_attn.o_proj", multiplier="residual_multiplier"
)
_COHERE_LOGITS = ("multiply", "logit_scale")
_GRANITE_LOGITS = ("divide", "logits_scaling")


def _llama_like(title: str, logits: tuple[str, str] | None = None) -> Architecture:
    return Architecture(title, _LLAMA_LIKE, _LLAMA_SUB, logits)


#: ``config.model_type`` to its :class:`Architecture`. Others can be given to the nnsight
#: backend with ``MuranoModel(..., backend="nnsight", layout=...)``.
ARCHITECTURES: dict[str, Architecture] = {
    "gpt2": Architecture(
        "GPT-2", _GPT2_LIKE, Sublayers("ln_2", "attn", "attn.c_proj", conv1d=True)
    ),
    "gpt_neo": Architecture(
        "GPT-Neo", _GPT2_LIKE, Sublayers("ln_2", "attn", "attn.attention.out_proj")
    ),
    "gptj": Architecture("GPT-J", _GPT2_LIKE, Sublayers(None, "attn", "attn.out_proj")),
    "gpt_bigcode": Architecture(
        "GPT-BigCode", _GPT2_LIKE, Sublayers("ln_2", "attn", "attn.c_proj")
    ),
    "bloom": Architecture(
        "BLOOM",
        _GPT2_LIKE,
        Sublayers("post_attention_layernorm", "self_attention", "self_attention.dense"),
    ),
    "falcon": Architecture(
        "Falcon",
        _GPT2_LIKE,
        Sublayers(
            "post_attention_layernorm",
            "self_attention",
            "self_attention.dense",
            parallel_flag="parallel_attn",
        ),
    ),
    # transformers 5 renamed GPT-NeoX's embed_out to lm_head.
    "gpt_neox": Architecture(
        "GPT-NeoX",
        Layout("gpt_neox.layers", "gpt_neox.final_layer_norm", "lm_head|embed_out"),
        Sublayers(
            "post_attention_layernorm",
            "attention",
            "attention.dense",
            parallel_flag="use_parallel_residual",
        ),
    ),
    # OPT-350m has no final norm (post-norm blocks) and projects 1024 -> 512 before lm_head.
    "opt": Architecture(
        "OPT",
        Layout(
            "model.decoder.layers",
            "model.decoder.final_layer_norm",
            "lm_head",
            between=("model.decoder.project_out",),
        ),
        Sublayers("final_layer_norm", "self_attn", "self_attn.out_proj"),
    ),
    "phi": Architecture(
        "Phi",
        Layout("model.layers", "model.final_layernorm", "lm_head"),
        Sublayers(None, "self_attn", "self_attn.dense"),
    ),
    "llama": _llama_like("Llama"),
    "mistral": _llama_like("Mistral"),
    "mixtral": _llama_like("Mixtral"),
    "qwen2": _llama_like("Qwen2"),
    "qwen2_moe": _llama_like("Qwen2-MoE"),
    "qwen3": _llama_like("Qwen3"),
    "qwen3_moe": _llama_like("Qwen3-MoE"),
    "gemma": _llama_like("Gemma"),
    "gemma2": Architecture("Gemma 2", _LLAMA_LIKE, _POST_NORMED),
    "gemma3_text": Architecture("Gemma 3", _LLAMA_LIKE, _POST_NORMED),
    "phi3": _llama_like("Phi-3"),
    "olmo": _llama_like("OLMo"),
    "olmo2": Architecture(
        "OLMo 2",
        _LLAMA_LIKE,
        Sublayers("mlp", "self_attn", "self_attn.o_proj", post_norm="post_attention_layernorm"),
    ),
    "stablelm": Architecture(
        "StableLM",
        _LLAMA_LIKE,
        Sublayers(
            "post_attention_layernorm",
            "self_attn",
            "self_attn.o_proj",
            parallel_flag="use_parallel_residual",
        ),
    ),
    "starcoder2": _llama_like("StarCoder2"),
    "cohere": Architecture("Cohere", _LLAMA_LIKE, _PARALLEL_SUB, _COHERE_LOGITS),
    "cohere2": Architecture("Cohere 2", _LLAMA_LIKE, _PARALLEL_SUB, _COHERE_LOGITS),
    "granite": Architecture("Granite", _LLAMA_LIKE, _GRANITE_SUB, _GRANITE_LOGITS),
    "granitemoe": Architecture("Granite MoE", _LLAMA_LIKE, _GRANITE_SUB, _GRANITE_LOGITS),
    "granitemoeshared": Architecture(
        "Granite MoE (shared experts)", _LLAMA_LIKE, _GRANITE_SUB, _GRANITE_LOGITS
    ),
    # Loaded through nnterp only: their logit transforms, for the lens and the self-check.
    "cohere2_moe": Architecture("Cohere 2 MoE", logits=_COHERE_LOGITS),
    "cohere_compass": Architecture("Cohere Compass", logits=_COHERE_LOGITS),
    "granite_swa": Architecture("Granite (sliding window)", logits=_GRANITE_LOGITS),
    "granitemoe_swa": Architecture("Granite MoE (sliding window)", logits=_GRANITE_LOGITS),
    "granitemoehybrid": Architecture("Granite MoE hybrid", logits=_GRANITE_LOGITS),
    "hyperclovax": Architecture("HyperCLOVA X", logits=("multiply", "logits_scaling")),
    "falcon_h1": Architecture("Falcon-H1", logits=("multiply", "lm_head_multiplier")),
}

#: ``config.model_type`` to :class:`Layout`, for the nnsight backend (a view of
#: :data:`ARCHITECTURES`).
LAYOUTS: dict[str, Layout] = {
    name: arch.layout for name, arch in ARCHITECTURES.items() if arch.layout is not None
}

#: ``config.model_type`` to (what the model does to its logits, the config attribute holding
#: the number), for every backend (a view of :data:`ARCHITECTURES`).
LOGIT_TRANSFORMS: dict[str, tuple[str, str]] = {
    name: arch.logits for name, arch in ARCHITECTURES.items() if arch.logits is not None
}

#: ``config.model_type`` to :class:`Sublayers` (a view of :data:`ARCHITECTURES`).
SUBLAYERS: dict[str, Sublayers] = {
    name: arch.sublayers for name, arch in ARCHITECTURES.items() if arch.sublayers is not None
}

#: ``config.model_type`` to the architecture's name in messages (a view of
#: :data:`ARCHITECTURES`).
TITLES: dict[str, str] = {name: arch.title for name, arch in ARCHITECTURES.items()}


# What the records say about logits, applied: a model's LogitTransform read from its type and
# config, and the error a backend raises for an architecture it cannot read.


class UnsupportedModelError(ValueError):
    """A backend cannot read this architecture (nnterp cannot rename it, or the nnsight backend
    has no layout for it). ``backend="auto"`` then tries the other backend."""


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
            value = text_config_value(config, attribute)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise UnsupportedModelError(
                f"{type(hf_model).__name__} (model_type {model_type!r}) {operation}s its logits "
                f"by config.{attribute}, which is {value!r}, not a positive number"
            )
        if value != 1:
            values[operation] = float(value)
    cap = text_config_value(config, "final_logit_softcapping")
    return LogitTransform(
        multiply=values["multiply"], divide=values["divide"], softcap=float(cap) if cap else None
    )


def text_config_value(config: Any, name: str) -> Any:
    """``config.name``, or the text model's (``get_text_config()``) for a multimodal config
    that keeps it there; ``None`` if neither has it."""
    value = getattr(config, name, None)
    if value is None and hasattr(config, "get_text_config"):
        value = getattr(config.get_text_config(), name, None)
    return value
