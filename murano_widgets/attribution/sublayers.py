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

To support an architecture: give its record in
:data:`murano_widgets.backends.architectures.ARCHITECTURES` a :class:`Sublayers`, with paths
relative to a decoder block; :func:`sublayers_of` is where a config selects a variant.
"""

from __future__ import annotations

from typing import Any

from murano_widgets.backends.architectures import SUBLAYERS, TITLES, Sublayers

__all__ = ["parallel_title", "sublayers_of"]


def parallel_title(config: Any) -> str:
    """What the errors call a parallel architecture: "GPT-NeoX (use_parallel_residual=True)"."""
    model_type = str(getattr(config, "model_type", None))
    sub = SUBLAYERS.get(model_type)
    flag = f" ({sub.parallel_flag}=True)" if sub is not None and sub.parallel_flag else ""
    return TITLES.get(model_type, str(model_type)) + flag


def sublayers_of(config: Any, wanted: str) -> Sublayers:
    """The :class:`Sublayers` of a model with ``config``.

    Args:
        config: The Hugging Face config.
        wanted: What asked (for the error): ``"sites=('resid_mid', ...)"``, ``"decompose=True"``.

    Raises:
        ValueError: If the architecture has no :class:`Sublayers`, or the config asks for a
            variant this package cannot split (OPT's post-norm blocks, Falcon's new
            decoder architecture with two norms).
    """
    # A config without a model type has no entry: None reads as None in the message.
    model_type: str | None = getattr(config, "model_type", None)
    known = SUBLAYERS.get(model_type) if model_type is not None else None
    if known is None:
        raise ValueError(
            f"{wanted} needs to know where the attention and the MLP of model_type "
            f"{model_type!r} meet; known: {', '.join(sorted(SUBLAYERS))}. Add it to "
            "murano_widgets.backends.architectures.ARCHITECTURES"
        )
    if model_type == "opt" and not getattr(config, "do_layer_norm_before", True):
        raise ValueError(
            f"{wanted}: this OPT model normalises after each sublayer (do_layer_norm_before="
            "False), so its residual stream is not a sum of sublayer outputs"
        )
    if model_type == "falcon" and getattr(config, "new_decoder_architecture", False):
        return Sublayers(None, "self_attention", "self_attention.dense")
    return known
