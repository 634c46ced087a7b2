"""What the checks compare with: the model's parts as plain modules, and one prompt's states.

The correct answers come from the package's own public paths (``run_logit_lens`` for the lens,
its decomposition for DLA, the backend's final norm and unembedding for logits); the states
read here (the embeddings and every block's output, by forward hooks) are what the known
mistakes are rebuilt from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from murano_widgets._checks import check_model

__all__ = ["ModelParts", "States", "continuation_id", "model_parts", "states"]


@dataclass(frozen=True)
class ModelParts:
    """A model's pieces as plain PyTorch modules, for computing a lens by hand.

    Attributes:
        model: The Hugging Face ``*ForCausalLM`` (call it on the tokenizer's output).
        blocks: The decoder blocks, first to last (``model.n_layers`` of them): block ``i``'s
            output is layer ``i`` of the lens.
        final_norm: The norm the model applies after its last block.
        unembedding: ``lm_head``: from ``d_model`` to the vocabulary.
        logit_transform: What the model does to ``lm_head``'s output before its softmax (a
            scale, a divisor, Gemma 2's soft-cap; the identity for most models): a callable
            on logits.
        device: Where the weights are: put the inputs there.
    """

    model: torch.nn.Module
    blocks: list[torch.nn.Module]
    final_norm: torch.nn.Module
    unembedding: torch.nn.Module
    logit_transform: Callable[[torch.Tensor], torch.Tensor]
    device: torch.device


def model_parts(model: Any) -> ModelParts:
    """The pieces of a :class:`~murano_widgets.MuranoModel` that the exercises use by hand.

    Args:
        model: A loaded model (``load_demo_model()``, ``MuranoModel(name)``).

    Returns:
        A :class:`ModelParts`.
    """
    check_model(model)
    hf_model = model._hf_model  # loads lazily loaded weights
    return ModelParts(
        model=hf_model,
        blocks=list(model._blocks),
        final_norm=model._final_norm,
        unembedding=model._lm_head,
        logit_transform=model.finalize_logits,
        device=torch.device(model._head_weight.device),
    )


@dataclass(frozen=True)
class States:
    """One prompt's residual stream, float32 on the model's device.

    Attributes:
        ids: ``[seq]`` the prompt's token ids (the tokenizer's, as the step takes them).
        embeddings: ``[seq, d_model]`` what enters block 0.
        blocks: ``[n_layers, seq, d_model]`` every block's output.
    """

    ids: torch.Tensor
    embeddings: torch.Tensor
    blocks: torch.Tensor


def _inputs(model: Any, prompt: str) -> dict[str, torch.Tensor]:
    encoded = model.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
    device = model._head_weight.device
    return {name: value.to(device) for name, value in encoded.items()}


def _forward_kwargs(model: Any) -> dict[str, Any]:
    return {"use_cache": False} if "use_cache" in model.forward_kwargs else {}


@torch.no_grad()
def states(model: Any, prompt: str, replace: dict[int, Any] | None = None) -> States:
    """``prompt``'s embeddings and block outputs (one forward pass with hooks).

    Args:
        model: The model.
        prompt: The prompt.
        replace: ``{layer: fn}``: block ``layer``'s output ``[seq, d]`` goes through ``fn``
            (a patch) before the rest of the model reads it.
    """
    inputs = _inputs(model, prompt)
    blocks = model._blocks
    seen: dict[str, torch.Tensor] = {}
    outputs: dict[int, torch.Tensor] = {}

    def embed(_module: Any, args: Any, kwargs: Any) -> None:
        seen["embed"] = args[0] if args else kwargs["hidden_states"]

    def keeper(index: int) -> Callable[..., Any]:
        def keep(_module: Any, _args: Any, output: Any) -> Any:
            hidden = output[0] if isinstance(output, tuple) else output
            if replace and index in replace:
                new = replace[index](hidden[0]).to(hidden.dtype).unsqueeze(0)
                hidden = new
                output = (new, *output[1:]) if isinstance(output, tuple) else new
            outputs[index] = hidden
            return output

        return keep

    handles = [blocks[0].register_forward_pre_hook(embed, with_kwargs=True)]
    handles += [block.register_forward_hook(keeper(i)) for i, block in enumerate(blocks)]
    try:
        model._hf_model(**inputs, **_forward_kwargs(model))
    finally:
        for handle in handles:
            handle.remove()
    return States(
        ids=inputs["input_ids"][0].cpu(),
        embeddings=seen["embed"][0].float(),
        blocks=torch.stack([outputs[i][0].float() for i in range(len(blocks))]),
    )


def raw_logits(model: Any, hidden: torch.Tensor, norm: bool = True) -> torch.Tensor:
    """``lm_head(final_norm(hidden))`` (or without the norm), before the logit transform,
    float32."""
    dtype = model._head_weight.dtype
    with torch.no_grad():
        x = hidden.to(dtype)
        if norm:
            x = model._final_norm(x)
        return model._lm_head(x).float()


def continuation_id(model: Any, prompt: str, text: str) -> int:
    """The first token ``text`` adds after ``prompt`` (tokenized together, as the step does;
    on its own where it merges with the prompt's last token)."""
    tokenizer = model.tokenizer
    context = list(tokenizer(prompt)["input_ids"])
    full = list(tokenizer(prompt + text)["input_ids"])
    if full[: len(context)] == context and len(full) > len(context):
        return int(full[len(context)])
    alone = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    if not alone:
        raise ValueError(f"{text!r} adds no token after the prompt {prompt!r}")
    return int(alone[0])
