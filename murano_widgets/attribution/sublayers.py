"""Where each architecture's blocks keep the points between their sublayers.

A decoder block adds two terms to the residual stream: its attention's and its MLP's. To split
the block output into them, the step reads, inside its one trace, either the residual stream
after the attention (``resid_mid``: the input of the module that starts the MLP half) or, where
attention and MLP run side by side on the same input (a *parallel* block: GPT-J, GPT-NeoX with
``use_parallel_residual``, Falcon, Cohere, Phi), the attention's own output. Every term is then
a difference of residual points the model itself computed, so the embedding plus the terms up
to a block sums to that block's output whatever the block does in between (Granite's residual
multiplier, Gemma 2's norms after each sublayer, a mixture of experts).

Heads need one more thing: the input of the attention's output projection (each head's slice
of it times its columns of the projection is that head's share), and the map from the
projection's output to the term added to the stream: the identity, Granite's multiplier, or
a norm after the attention (Gemma 2 and 3, OLMo 2), linearised at the position's own
attention output.

To support an architecture: add its ``config.model_type`` to :data:`SUBLAYERS`, with paths
relative to a decoder block. Plain classes, not dataclasses: remote traces send this package's
code by value, where a dataclass cannot be rebuilt.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SUBLAYERS", "Sublayers", "sublayers_of"]


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


_LLAMA = Sublayers("post_attention_layernorm", "self_attn", "self_attn.o_proj")
_POST_NORMED = Sublayers(
    "pre_feedforward_layernorm",
    "self_attn",
    "self_attn.o_proj",
    post_norm="post_attention_layernorm",
)
_GPT2 = Sublayers("ln_2", "attn", "attn.c_proj", conv1d=True)

#: ``config.model_type`` to :class:`Sublayers`.
SUBLAYERS: dict[str, Sublayers] = {
    "gpt2": _GPT2,
    "gpt_bigcode": Sublayers("ln_2", "attn", "attn.c_proj"),
    "gpt_neo": Sublayers("ln_2", "attn", "attn.attention.out_proj"),
    "gptj": Sublayers(None, "attn", "attn.out_proj"),
    "gpt_neox": Sublayers(
        "post_attention_layernorm",
        "attention",
        "attention.dense",
        parallel_flag="use_parallel_residual",
    ),
    "phi": Sublayers(None, "self_attn", "self_attn.dense"),
    "cohere": Sublayers(None, "self_attn", "self_attn.o_proj"),
    "cohere2": Sublayers(None, "self_attn", "self_attn.o_proj"),
    "falcon": Sublayers(
        "post_attention_layernorm",
        "self_attention",
        "self_attention.dense",
        parallel_flag="parallel_attn",
    ),
    "bloom": Sublayers("post_attention_layernorm", "self_attention", "self_attention.dense"),
    "opt": Sublayers("final_layer_norm", "self_attn", "self_attn.out_proj"),
    "stablelm": Sublayers(
        "post_attention_layernorm",
        "self_attn",
        "self_attn.o_proj",
        parallel_flag="use_parallel_residual",
    ),
    "gemma2": _POST_NORMED,
    "gemma3_text": _POST_NORMED,
    "olmo2": Sublayers(
        "mlp", "self_attn", "self_attn.o_proj", post_norm="post_attention_layernorm"
    ),
    "granite": Sublayers(
        "post_attention_layernorm",
        "self_attn",
        "self_attn.o_proj",
        multiplier="residual_multiplier",
    ),
    "granitemoe": Sublayers(
        "post_attention_layernorm",
        "self_attn",
        "self_attn.o_proj",
        multiplier="residual_multiplier",
    ),
    "granitemoeshared": Sublayers(
        "post_attention_layernorm",
        "self_attn",
        "self_attn.o_proj",
        multiplier="residual_multiplier",
    ),
    **{
        name: _LLAMA
        for name in (
            "llama",
            "mistral",
            "mixtral",
            "qwen2",
            "qwen2_moe",
            "qwen3",
            "qwen3_moe",
            "gemma",
            "phi3",
            "olmo",
            "starcoder2",
        )
    },
}

#: What the errors call a parallel architecture.
PARALLEL_NAMES = {
    "gptj": "GPT-J",
    "gpt_neox": "GPT-NeoX (use_parallel_residual=True)",
    "phi": "Phi",
    "cohere": "Cohere",
    "cohere2": "Cohere 2",
    "falcon": "Falcon (parallel_attn=True)",
    "stablelm": "StableLM (use_parallel_residual=True)",
}


def sublayers_of(config: Any, wanted: str) -> Sublayers:
    """The :class:`Sublayers` of a model with ``config``.

    Args:
        config: The Hugging Face config.
        wanted: What asked (for the error): ``"sites=('resid_mid', ...)"``, ``"decompose=True"``.

    Raises:
        ValueError: If the architecture is not in :data:`SUBLAYERS`, or the config asks for a
            variant this package cannot split (OPT's post-norm blocks, Falcon's new
            decoder architecture with two norms).
    """
    model_type = getattr(config, "model_type", None)
    known = SUBLAYERS.get(model_type)
    if known is None:
        raise ValueError(
            f"{wanted} needs to know where the attention and the MLP of model_type "
            f"{model_type!r} meet; known: {', '.join(sorted(SUBLAYERS))}. Add it to "
            "murano_widgets.attribution.sublayers.SUBLAYERS"
        )
    if model_type == "opt" and not getattr(config, "do_layer_norm_before", True):
        raise ValueError(
            f"{wanted}: this OPT model normalises after each sublayer (do_layer_norm_before="
            "False), so its residual stream is not a sum of sublayer outputs"
        )
    if model_type == "falcon" and getattr(config, "new_decoder_architecture", False):
        return Sublayers(None, "self_attention", "self_attention.dense")
    return known
