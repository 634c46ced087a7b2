"""Direct logit attribution computed independently, in plain transformers (hooks on the blocks'
output projections and MLPs), for the tiny GPT-2 and Llama models of the interop suite; and the
bookkeeping that maps it onto TransformerLens's units.

What it computes (issue 23's contract, at a prompt's last position): the final residual stream
``x`` is the sum of what every component wrote into it: ``"embed"`` (the token embedding plus,
in GPT-2, the position embedding: everything that enters block 0), then per block ``l`` its
attention output ``"L{l}.attn"`` (or, with heads, each head's ``z_h @ W_O[h]`` as ``"L{l}.H{h}"``
and the output projection's bias as ``"L{l}.attn_bias"``) and its MLP output ``"L{l}.mlp"``.
The final norm is linearised at ``x`` itself: LayerNorm as ``(c - mean(c)) / s * w`` with
``s = sqrt(var(x) + eps)``, RMSNorm as ``c / s * w`` with ``s = sqrt(mean(x²) + eps)``; each
component's contribution to token ``t`` is that times ``W_U[:, t]``, and the rest of the logit
(the norm's bias through ``W_U``, the unembedding's bias) is the bias term, so that
contributions plus bias equal the model's own logit exactly (checked here on every call).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def build_affine_variant(folder: Path, seed: int = 1) -> Path:
    """Rewrites the tiny model in ``folder`` (built by ``tiny_models.build_tiny_model``) with every
    bias and norm weight random, in place; its tokenizer stays.

    The suite's tiny models keep their 1-D parameters at their initial values (zero biases, unit
    norm weights), which would make every convention about biases and norm weights vacuous:
    folding value biases, the output projection's bias, the final norm's weight and bias. Here
    they all matter. Llama gets biases on its attention and MLP projections
    (``attention_bias``, ``mlp_bias``) so that it has value and output biases too.
    """
    config = AutoConfig.from_pretrained(folder)
    if config.model_type == "llama":
        config.attention_bias = True
        config.mlp_bias = True
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() > 1 or name.endswith("bias"):
                parameter.normal_(0.0, 0.3)
            else:  # a norm's weight
                parameter.copy_(1.0 + 0.3 * torch.randn_like(parameter))
    model.eval()
    model.save_pretrained(folder)
    return folder


@dataclass
class Decomposition:
    """One prompt's final residual stream at its last position, split into what wrote it."""

    labels: list[str]
    vectors: torch.Tensor  # [C, d_model] float64: each component's write
    norm_input_scale: float  # s of the final norm at the residual's own value
    centre: bool  # LayerNorm (centres each component) or RMSNorm
    norm_weight: torch.Tensor  # [d_model]
    unembed: torch.Tensor  # [d_model, vocab]
    bias: torch.Tensor  # [vocab]: the final norm's bias through W_U plus W_U's bias
    value_bias_writes: torch.Tensor  # [n_layers, n_heads, d_model]: b_V(h) @ W_O[h] per head
    logits: torch.Tensor  # [vocab] float64: the model's own logits there

    def normalised(self, vectors: torch.Tensor) -> torch.Tensor:
        """``vectors`` through the final norm linearised at this residual (weight included)."""
        if self.centre:
            vectors = vectors - vectors.mean(-1, keepdim=True)
        return vectors / self.norm_input_scale * self.norm_weight

    def contributions(self, token: int, foil: int | None = None) -> tuple[torch.Tensor, float]:
        """``[C]`` contributions to ``token``'s logit (minus ``foil``'s) and the bias term."""
        direction = self.unembed[:, token]
        bias = self.bias[token]
        if foil is not None:
            direction = direction - self.unembed[:, foil]
            bias = bias - self.bias[foil]
        return self.normalised(self.vectors) @ direction, float(bias)

    def vocab_mean(self, vectors: torch.Tensor) -> torch.Tensor:
        """Each of ``vectors``' contribution averaged over the whole vocabulary."""
        return self.normalised(vectors) @ self.unembed.mean(-1)


def _layout(model) -> tuple[list, object, str]:
    kind = model.config.model_type
    if kind == "gpt2":
        return list(model.transformer.h), model.transformer.ln_f, kind
    if kind == "llama":
        return list(model.model.layers), model.model.norm, kind
    raise ValueError(f"no reference decomposition for {kind!r}")


def decompose(model, ids: list[int], heads: bool) -> Decomposition:
    """Runs ``model`` (a plain transformers GPT-2 or Llama, float32, eval) on one prompt's
    ``ids`` and splits its final residual at the last position into components."""
    blocks, final_norm, kind = _layout(model)
    n_heads = model.config.num_attention_heads
    d_model = model.config.hidden_size
    d_head = d_model // n_heads if kind == "gpt2" else model.config.head_dim
    seen: dict[str, torch.Tensor] = {}
    handles = []

    def keep(name, take_input=False):
        def hook(module, args, output):
            seen[name] = (args[0] if take_input else output)[0, -1].detach().double()

        return hook

    for layer, block in enumerate(blocks):
        projection = block.attn.c_proj if kind == "gpt2" else block.self_attn.o_proj
        handles.append(projection.register_forward_hook(keep(f"z{layer}", take_input=True)))
        handles.append(projection.register_forward_hook(keep(f"attn{layer}")))
        handles.append(block.mlp.register_forward_hook(keep(f"mlp{layer}")))
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_hidden_states=True)
    finally:
        for handle in handles:
            handle.remove()

    labels = ["embed"]
    vectors = [out.hidden_states[0][0, -1].double()]
    value_bias_writes = torch.zeros(len(blocks), n_heads, d_model, dtype=torch.float64)
    for layer, block in enumerate(blocks):
        projection = block.attn.c_proj if kind == "gpt2" else block.self_attn.o_proj
        # W_O as [n_heads, d_head, d_model]: GPT-2's Conv1D stores [in, out], Linear [out, in].
        weight = projection.weight.detach().double()
        W_O = (weight if kind == "gpt2" else weight.T).reshape(n_heads, d_head, d_model)
        b_O = projection.bias
        b_O = torch.zeros(d_model) if b_O is None else b_O.detach()
        head_writes = torch.einsum("hd,hdm->hm", seen[f"z{layer}"].reshape(n_heads, d_head), W_O)
        whole = head_writes.sum(0) + b_O.double()
        assert torch.allclose(whole, seen[f"attn{layer}"], atol=1e-5), layer
        if heads:
            labels += [f"L{layer}.H{h}" for h in range(n_heads)] + [f"L{layer}.attn_bias"]
            vectors += [*head_writes, b_O.double()]
        else:
            labels.append(f"L{layer}.attn")
            vectors.append(whole)
        labels.append(f"L{layer}.mlp")
        vectors.append(seen[f"mlp{layer}"])
        value_bias_writes[layer] = _value_bias_writes(block, kind, W_O, n_heads, d_head)
    vectors = torch.stack(vectors)
    resid = vectors.sum(0)

    weight = final_norm.weight.detach().double()
    eps = final_norm.eps if kind == "gpt2" else final_norm.variance_epsilon
    centre = kind == "gpt2"
    if centre:
        scale = float(torch.sqrt(resid.var(unbiased=False) + eps))
        norm_bias = final_norm.bias.detach().double()
    else:
        scale = float(torch.sqrt(resid.pow(2).mean() + eps))
        norm_bias = torch.zeros(d_model, dtype=torch.float64)
    unembed = model.lm_head.weight.detach().double().T
    bias = norm_bias @ unembed
    if model.lm_head.bias is not None:
        bias = bias + model.lm_head.bias.detach().double()
    found = Decomposition(
        labels=labels,
        vectors=vectors,
        norm_input_scale=scale,
        centre=centre,
        norm_weight=weight,
        unembed=unembed,
        bias=bias,
        value_bias_writes=value_bias_writes,
        logits=out.logits[0, -1].detach().double(),
    )
    # The decomposition is exact: the components, through the norm at this residual, plus the
    # bias give the model's own logits for every token.
    rebuilt = found.normalised(vectors).sum(0) @ unembed + bias
    assert torch.allclose(rebuilt, found.logits, atol=1e-4), (rebuilt - found.logits).abs().max()
    return found


def _value_bias_writes(block, kind, W_O, n_heads, d_head) -> torch.Tensor:
    """``[n_heads, d_model]``: what each head writes whatever it attends to (its attention
    weights sum to 1): the bias of its values, ``b_V(h) @ W_O[h]``. In GPT-2 the values are
    ``ln_1(x) @ W_V + b_V``, and ln_1's bias, ``b_1 @ W_V``, is as constant as ``b_V``:
    TransformerLens folds it into ``b_V`` when it folds ln_1 (``fold_ln``), so it counts here."""
    d_model = W_O.shape[-1]
    if kind == "gpt2":
        weight = block.attn.c_attn.weight.detach().double()[:, 2 * d_model :]
        b_V = block.attn.c_attn.bias.detach().double()[2 * d_model :]
        b_V = b_V + block.ln_1.bias.detach().double() @ weight
    else:
        v_proj = block.self_attn.v_proj
        if v_proj.bias is None:
            return torch.zeros(n_heads, d_model, dtype=torch.float64)
        n_kv = v_proj.bias.shape[0] // d_head
        b_V = v_proj.bias.detach().double().reshape(n_kv, d_head)
        b_V = b_V.repeat_interleave(n_heads // n_kv, dim=0).reshape(-1)  # each query head's
    return torch.einsum("hd,hdm->hm", b_V.reshape(n_heads, d_head), W_O)


def to_transformer_lens(
    labels: list[str], values: torch.Tensor, tl_labels: list[str]
) -> torch.Tensor:
    """Values of the contract's components (``labels``) summed into TransformerLens's units
    (``tl_labels``, in its order), using each of ours exactly once.

    - component unit: ``embed`` + ``pos_embed`` (GPT-2; Llama has only ``embed``) is our
      ``embed``; ``{l}_attn_out`` is ``L{l}.attn``; ``{l}_mlp_out`` is ``L{l}.mlp``;
    - head unit: ``L{l}H{h}`` is ``L{l}.H{h}``; ``remainder`` (the final residual minus every
      head) is ``embed`` plus every ``L{l}.attn_bias`` and ``L{l}.mlp``.
    """
    index = {label: i for i, label in enumerate(labels)}
    used: list[str] = []

    def take(label: str) -> torch.Tensor:
        used.append(label)
        return values[index[label]]

    out = []
    for tl_label in tl_labels:
        if tl_label == "embed":
            out.append(take("embed"))
        elif tl_label == "pos_embed":
            out.append(torch.zeros((), dtype=values.dtype))  # in our "embed" already
        elif tl_label.endswith("_attn_out"):
            out.append(take(f"L{tl_label.split('_')[0]}.attn"))
        elif tl_label.endswith("_mlp_out"):
            out.append(take(f"L{tl_label.split('_')[0]}.mlp"))
        elif tl_label == "remainder":
            rest = [x for x in labels if x == "embed" or x.endswith((".attn_bias", ".mlp"))]
            out.append(sum((take(x) for x in rest), torch.zeros((), dtype=values.dtype)))
        else:  # L{l}H{h}
            layer, head = tl_label[1:].split("H")
            out.append(take(f"L{layer}.H{head}"))
    assert sorted(used) == sorted(labels), (sorted(set(labels) - set(used)), used)
    return torch.stack(out)


def merge_embeddings(tl_labels: list[str], tl_values: torch.Tensor) -> torch.Tensor:
    """TransformerLens's values with ``pos_embed`` added into ``embed`` (and itself zero), to set
    beside ``to_transformer_lens``'s."""
    values = tl_values.clone().double()
    if "pos_embed" in tl_labels:
        values[tl_labels.index("embed")] += values[tl_labels.index("pos_embed")]
        values[tl_labels.index("pos_embed")] = 0.0
    return values
