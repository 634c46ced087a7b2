"""An independent logit lens in plain transformers: forward hooks on the decoder blocks, then
the model's final norm and lm_head, one prompt at a time (no padding anywhere)."""

from __future__ import annotations

import math

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def _blocks_and_norm(model):
    base = model.base_model
    if hasattr(base, "decoder"):  # OPT keeps its blocks and final norm one level down
        return base.decoder.layers, base.decoder.final_layer_norm
    for blocks, norm in (
        ("layers", "norm"),
        ("h", "ln_f"),
        ("layers", "final_layer_norm"),
        ("layers", "final_layernorm"),
    ):
        if hasattr(base, blocks) and hasattr(base, norm):
            return getattr(base, blocks), getattr(base, norm)
    raise AssertionError(f"unknown layout for {type(model).__name__}")


def token_word(tokenizer, token_id: int) -> str:
    """A token's text as a result must carry it, worked out with transformers alone: the
    tokenizer's own decode, except that a byte-level BPE token holding only part of a UTF-8
    character (its decode a bare "\ufffd") is its bytes, the split ones written "<0xE6>"."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    text = tokenizer.decode([token_id])
    if "\ufffd" not in text:
        return text
    decoder = {char: byte for byte, char in bytes_to_unicode().items()}
    piece = tokenizer.convert_ids_to_tokens(token_id)
    if not all(char in decoder for char in piece):
        return text
    raw = bytes(decoder[char] for char in piece)
    out, at = "", 0
    while at < len(raw):  # the longest valid UTF-8 character at each byte, else the byte
        for size in (4, 3, 2, 1):
            try:
                out += raw[at : at + size].decode("utf-8")
                at += size
                break
            except UnicodeDecodeError:
                continue
        else:
            out += f"<0x{raw[at]:02X}>"
            at += 1
    return out


class ReferenceLens:
    """Per-prompt reference values of every layer's lens, computed without murano_widgets."""

    def __init__(self, folder):
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.blocks, self.norm = _blocks_and_norm(self.model)
        config = self.model.config
        self.cap = getattr(config, "final_logit_softcapping", None)
        # What the model's forward does to lm_head's output, written out here from
        # transformers' modeling_cohere.py and modeling_granite.py, not from murano_widgets.
        self.scale = {
            "cohere": lambda logits: logits * config.logit_scale,
            "granite": lambda logits: logits / config.logits_scaling,
        }.get(config.model_type, lambda logits: logits)

    @torch.no_grad()
    def probs_of_ids(self, ids: list[int]) -> torch.Tensor:
        """``[layers, seq, vocab]`` every layer's lens distribution over one token sequence."""
        return self._run({"input_ids": torch.tensor([ids])})["probs"]

    @torch.no_grad()
    def run(self, prompt: str, top_k: int = 5, jacobians=None) -> dict[str, torch.Tensor]:
        """Every layer's lens of ``prompt``; with ``jacobians`` (``{layer: [d, d]}``) each block
        output ``h`` of those layers is read as ``J h`` first (the Jacobian lens)."""
        ids = self.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        return self._run(dict(ids), top_k, jacobians)

    def _run(self, ids: dict, top_k: int = 5, jacobians=None) -> dict[str, torch.Tensor]:
        captured = []
        hooks = [
            block.register_forward_hook(
                lambda _m, _i, out: captured.append(out[0] if isinstance(out, tuple) else out)
            )
            for block in self.blocks
        ]
        try:
            output = self.model(**ids)
        finally:
            for hook in hooks:
                hook.remove()
        if jacobians:
            last = len(captured) - 1
            captured = [
                h @ jacobians[layer].T if layer in jacobians and layer != last else h
                for layer, h in enumerate(captured)
            ]
        logits = torch.stack([self.model.lm_head(self.norm(h))[0] for h in captured])
        logits = self.scale(logits).float()
        if self.cap:
            logits = torch.tanh(logits / self.cap) * self.cap
        probs = logits.softmax(-1)  # [layers, seq, vocab]
        model_probs = output.logits[0].float().softmax(-1)  # the model's own output
        final = model_probs.argmax(-1)  # [seq]
        final_p = probs.gather(-1, final.expand(probs.shape[0], -1).unsqueeze(-1)).squeeze(-1)
        topk = probs.topk(top_k, dim=-1)
        log2 = lambda p: p.clamp_min(1e-45).log() / math.log(2)  # noqa: E731
        return {
            "input_ids": ids["input_ids"][0],
            "probs": probs,
            "model_probs": model_probs,
            "max_probs": topk.values[..., 0],
            "predicted_tokens": topk.indices[..., 0],
            "topk_probs": topk.values,
            "topk_tokens": topk.indices,
            "entropy": -(probs * log2(probs)).sum(-1),
            "final_tokens": final,
            "final_token_probs": final_p,
            "final_token_ranks": (probs > final_p.unsqueeze(-1)).sum(-1),
            "kl_to_final": (model_probs * (log2(model_probs) - log2(probs))).sum(-1),
        }


def reference_jacobian_lens(
    folder, texts, *, source_layers=None, skip_first: int = 16, max_seq_len: int = 128
) -> dict[int, torch.Tensor]:
    """The Jacobian lens by its definition, written without murano_widgets: for each text and
    source layer ``l``, the full Jacobian of the last block's output with respect to block
    ``l``'s output (``torch.autograd.functional.jacobian``, block ``l``'s output replaced by a
    forward hook), then ``J_l = mean_{t∈V} Σ_{t'∈V, t'≥t} ∂h_last,t' / ∂h_l,t`` with
    ``V = [skip_first, seq - 1)``, averaged over texts (those with a valid position), in
    float64. One text at a time, tokenized by the tokenizer alone, cut to ``max_seq_len``."""
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    blocks, _ = _blocks_and_norm(model)
    last = len(blocks) - 1
    layers = list(range(last)) if source_layers is None else list(source_layers)
    sums = {layer: None for layer in layers}
    count = 0

    def output_of(block_index, ids, replace=None):
        """Block ``block_index``'s output (batch row 0); ``replace`` swaps in another output
        for its block ``(index, tensor)`` first."""
        seen = {}

        def swap(_module, _inputs, output):
            new = replace[1].unsqueeze(0)
            return (new, *output[1:]) if isinstance(output, tuple) else new

        def keep(_module, _inputs, output):
            seen["h"] = output[0] if isinstance(output, tuple) else output

        hooks = []
        if replace is not None:
            hooks.append(blocks[replace[0]].register_forward_hook(swap))
        hooks.append(blocks[block_index].register_forward_hook(keep))
        try:
            model(input_ids=ids, use_cache=False)
        finally:
            for hook in hooks:
                hook.remove()
        return seen["h"][0]

    for text in texts:
        ids = tokenizer(text, return_tensors="pt", return_token_type_ids=False)["input_ids"]
        ids = ids[:, :max_seq_len]
        seq = ids.shape[1]
        valid = list(range(skip_first, seq - 1))
        if not valid:
            continue
        count += 1
        index = torch.tensor(valid)
        causal = index[:, None] >= index[None, :]  # [t', t]: t' >= t
        for layer in layers:
            with torch.no_grad():
                h = output_of(layer, ids)
            full = torch.autograd.functional.jacobian(
                lambda x, layer=layer, ids=ids: output_of(last, ids, replace=(layer, x)),
                h,
                vectorize=True,
            )  # [seq, d, seq, d]: (t', i, t, j)
            sub = full.double().index_select(0, index).index_select(2, index)
            sub = sub * causal[:, None, :, None]
            matrix = sub.sum(dim=0).mean(dim=1)  # Σ over t', mean over t: [d, d]
            sums[layer] = matrix if sums[layer] is None else sums[layer] + matrix
    return {layer: total / count for layer, total in sums.items()}


class ReferenceAttribution:
    """Direct logit attribution by its definition, in plain transformers (no murano_widgets).

    One prompt, no padding. Forward hooks take the residual stream's terms: block 0's input
    (the embedding), each block's attention output and MLP output (Llama- and GPT-2-style
    blocks: ``h_mid = h + attn(.)``, ``h_out = h_mid + mlp(.)``), and each block's output. A
    cell is (block ``row``'s output, ``position``). Its logit of ``token`` through the logit
    lens is ``lm_head(norm(h))[token]``; with the final norm's per-position scale ``s`` taken
    from the cell's own ``h`` (``s = 1 / sqrt(mean(P(h)^2) + eps)``, ``P`` the centring of a
    LayerNorm, the identity for an RMSNorm), the readout is linear in ``h`` and each term ``x``
    contributes ``s * (P(x) * g) . U[token]``. The terms' sum plus the norm's and unembedding's
    biases is the logit. With a foil, everything is of ``U[token] - U[foil]``.
    """

    def __init__(self, folder):
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.blocks, self.norm = _blocks_and_norm(self.model)

    def token_id(self, prompt: str, continuation: str) -> int:
        """The first token of ``continuation`` as it follows ``prompt``."""
        n = len(self.tokenizer(prompt)["input_ids"])
        return self.tokenizer(prompt + continuation)["input_ids"][n]

    @torch.no_grad()
    def terms(self, prompt: str) -> tuple[list[str], torch.Tensor, torch.Tensor]:
        """The labels ``["embed", "L0.attn", "L0.mlp", ...]``, the terms ``[C, seq, d]`` and
        the block outputs ``[layers, seq, d]``."""
        seen: dict[str, list[torch.Tensor]] = {"in": [], "attn": [], "mlp": [], "out": []}

        def first(value):
            return value[0] if isinstance(value, tuple) else value

        hooks = []
        for block in self.blocks:
            attn = getattr(block, "self_attn", None) or block.attn
            hooks += [
                block.register_forward_pre_hook(
                    lambda _m, args, kwargs: seen["in"].append(
                        args[0] if args else kwargs["hidden_states"]
                    ),
                    with_kwargs=True,
                ),
                attn.register_forward_hook(lambda _m, _i, o: seen["attn"].append(first(o))),
                block.mlp.register_forward_hook(lambda _m, _i, o: seen["mlp"].append(first(o))),
                block.register_forward_hook(lambda _m, _i, o: seen["out"].append(first(o))),
            ]
        ids = self.tokenizer(prompt, return_tensors="pt", return_token_type_ids=False)
        try:
            self.model(**ids)
        finally:
            for hook in hooks:
                hook.remove()
        labels, terms = ["embed"], [seen["in"][0][0]]
        for layer, (attn, mlp) in enumerate(zip(seen["attn"], seen["mlp"], strict=True)):
            labels += [f"L{layer}.attn", f"L{layer}.mlp"]
            terms += [attn[0], mlp[0]]
        return labels, torch.stack(terms), torch.stack([out[0] for out in seen["out"]])

    @torch.no_grad()
    def attribute(
        self, prompt: str, token: int, *, foil: int | None = None, row: int = -1, position=-1
    ) -> dict[str, object]:
        """The direct logit attribution of ``token`` (minus ``foil``) at block ``row``'s
        output, ``position``, through the logit lens: ``parts`` (label -> share; the
        components after the row are left out), ``bias``, ``logit`` (``lm_head(norm(h))``
        run on the cell, of ``token`` minus ``foil``) and ``top1`` (the cell's top-1 id)."""
        labels, terms, outputs = self.terms(prompt)
        n_layers = outputs.shape[0]
        row = row % n_layers
        h = outputs[row, position]
        norm = self.norm
        centred = isinstance(norm, torch.nn.LayerNorm)
        eps = next(
            getattr(norm, name)
            for name in ("eps", "variance_epsilon")
            if isinstance(getattr(norm, name, None), float)
        )

        def project(x):
            return x - x.mean(-1, keepdim=True) if centred else x

        s = torch.rsqrt(project(h).pow(2).mean() + eps)
        gain = norm.weight.detach()
        norm_bias = getattr(norm, "bias", None)
        head = self.model.lm_head
        w = head.weight[token] - (head.weight[foil] if foil is not None else 0)
        head_bias = 0.0
        if head.bias is not None:
            head_bias = head.bias[token] - (head.bias[foil] if foil is not None else 0)
        kept = 1 + 2 * (row + 1)  # the embedding, then each block's attention and MLP
        parts = {
            label: float(s * (project(terms[c, position]) * gain) @ w)
            for c, label in enumerate(labels[:kept])
        }
        bias = float((norm_bias @ w if norm_bias is not None else 0.0) + head_bias)
        logits = head(norm(h))
        logit = logits[token] - (logits[foil] if foil is not None else 0)
        return {"parts": parts, "bias": bias, "logit": float(logit), "top1": int(logits.argmax())}
