"""Synthetic ``LogitLensResult`` objects for the browser tests and the render benchmark.

They go through the real widget (``LogitLensWidget``) and its payload encoder, so the browser sees
exactly what a notebook would; only the numbers are made up (no model is run).
"""

from __future__ import annotations

import math
from itertools import pairwise

import torch

from murano_widgets.results.result import LogitLensResult
from murano_widgets.types import Node

# Tokens that must render as text: HTML, entities, newlines, a right-to-left mark, leading
# spaces, a lone byte piece of a UTF-8 character, right-to-left letters.
HOSTILE_TOKENS = [
    "<img src=x onerror=window.__pwned=1>",
    "<script>window.__pwned=2</script>",
    "&amp;",
    "\n",
    "\u200f",
    "  two spaces",
    "\ufffd",
    "\"'",
    "שלום",
    "\t",
]

PLAIN_TOKENS = [
    "The",
    " Eiff",
    "el",
    " Tower",
    " is",
    " in",
    " the",
    " city",
    " of",
    " Paris",
    " France",
    " London",
    " one",
    " two",
    " three",
    " four",
    " five",
    ",",
    ".",
    " a",
    " Rome",
    " Berlin",
    " and",
    " located",
    " capital",
]


def make_result(
    prompts: list[list[str]] | None = None,
    n_layers: int = 8,
    layers: list[int] | None = None,
    padding: str = "left",
    top_k: int = 5,
    vocab: list[str] | None = None,
    missing: tuple[int, int] | None = None,
    model_name: str = "synthetic-gpt",
    seed: int = 0,
) -> LogitLensResult:
    """A consistent result: each position's prediction settles on its final token at some layer.

    Args:
        prompts: Each prompt as a list of token strings (default: two short English prompts).
        n_layers: Rows (model layers ``0..n_layers-1`` unless ``layers`` is given).
        padding: ``"left"`` or ``"right"``: where the shorter prompts are padded.
        top_k: Top tokens per cell (top-1 included).
        vocab: The token strings (ids are indices); defaults to the prompts' tokens and some words.
        missing: ``(row, prompt)``: that row of that prompt is NaN (a non-finite layer).
    """
    g = torch.Generator().manual_seed(seed)
    if prompts is None:
        prompts = [
            ["The", " Eiff", "el", " Tower", " is", " in", " the", " city", " of"],
            [" one", " two", " three", " four"],
        ]
    words = list(dict.fromkeys((vocab or []) + PLAIN_TOKENS + [t for p in prompts for t in p]))
    ids = {w: i for i, w in enumerate(words)}
    V = len(words)
    layers = layers if layers is not None else list(range(n_layers))
    L, B = len(layers), len(prompts)
    S = max(len(p) for p in prompts)
    mask = torch.zeros(B, S, dtype=torch.long)
    input_ids = torch.full((B, S), -1, dtype=torch.long)
    input_words = [[""] * S for _ in range(B)]
    for b, tokens in enumerate(prompts):
        start = S - len(tokens) if padding == "left" else 0
        for j, tok in enumerate(tokens):
            mask[b, start + j] = 1
            input_ids[b, start + j] = ids[tok]
            input_words[b][start + j] = tok
    # The final prediction at each position: the next input token, else a random word.
    final = torch.randint(0, V, (B, S), generator=g)
    for b in range(B):
        real = torch.nonzero(mask[b]).flatten().tolist()
        for a, c in pairwise(real):
            final[b, a] = input_ids[b, c]
    settle = torch.randint(max(1, L // 3), L, (B, S), generator=g)  # first settled row
    settle[:, -1] = max(0, L - 3)
    top = torch.zeros(L, B, S, top_k, dtype=torch.long)
    probs = torch.zeros(L, B, S, top_k)
    entropy = torch.zeros(L, B, S)
    fprob = torch.zeros(L, B, S)
    frank = torch.zeros(L, B, S, dtype=torch.long)
    kl = torch.zeros(L, B, S)
    log_v = math.log2(max(V, 2) * 1000)
    for i in range(L):
        depth = (i + 1) / L
        for b in range(B):
            for s in range(S):
                f = int(final[b, s])
                others = torch.randperm(V, generator=g).tolist()
                others = [t for t in others if t != f]
                p1 = 0.05 + 0.9 * depth**2 * (0.6 + 0.4 * torch.rand(1, generator=g).item())
                settled = i >= int(settle[b, s])
                rank = 0 if settled else int(1 + (L - i) * 3 * torch.rand(1, generator=g).item())
                row = [f, *others[: top_k - 1]] if settled else others[:top_k]
                if not settled and rank < top_k:
                    row[rank] = f
                rest = torch.sort(torch.rand(top_k - 1, generator=g), descending=True).values
                rest = rest / rest.sum() * (1 - p1) * 0.7
                top[i, b, s] = torch.tensor(row)
                probs[i, b, s] = torch.cat([torch.tensor([p1]), rest.clamp(max=p1)])
                entropy[i, b, s] = log_v * (1 - depth) * 0.8 + 0.3
                fprob[i, b, s] = p1 if settled else probs[i, b, s, rank] if rank < top_k else 0.001
                frank[i, b, s] = rank
                kl[i, b, s] = 0.0 if i == L - 1 else 6.0 * (1 - depth) ** 1.5 + 0.05
    pad = mask == 0
    for t in (probs, entropy, fprob, kl):
        t[:, pad] = float("nan")
    top[:, pad] = -1
    frank[:, pad] = -1
    if missing is not None:
        row, b = missing
        probs[row, b] = float("nan")
        entropy[row, b] = float("nan")
        fprob[row, b] = float("nan")
        kl[row, b] = float("nan")
    predicted = top[..., 0]
    predicted_words = [
        [[words[t] if t >= 0 else "" for t in predicted[i, b].tolist()] for b in range(B)]
        for i in range(L)
    ]
    final = final.masked_fill(pad, -1)
    return LogitLensResult(
        all_probs=None,
        max_probs=probs[..., 0].clone(),
        predicted_tokens=predicted.clone(),
        predicted_words=predicted_words,
        input_words=input_words,
        attention_mask=mask,
        addresses=[Node(layer) for layer in layers],
        topk_tokens=top,
        topk_probs=probs,
        entropy=entropy,
        final_token_probs=fprob,
        final_token_ranks=frank,
        kl_to_final=kl,
        final_tokens=final,
        input_ids=input_ids,
        prompts=["".join(p) for p in prompts],
        token_strings=dict(enumerate(words)),
        vocab_size=V * 1000,
        model_name=model_name,
    )


def make_large_result(
    n_layers: int = 80, n_positions: int = 1000, n_prompts: int = 1, top_k: int = 5, seed: int = 0
) -> LogitLensResult:
    """A big result built with tensor operations (for the render benchmark)."""
    g = torch.Generator().manual_seed(seed)
    V = 5000
    words = [f" w{i}" for i in range(V)]
    L, B, S = n_layers, n_prompts, n_positions
    input_ids = torch.randint(0, V, (B, S), generator=g)
    final = torch.randint(0, V, (B, S), generator=g)
    depth = (torch.arange(L, dtype=torch.float32) + 1).div(L).view(L, 1, 1)
    settle = torch.randint(L // 3, L, (1, B, S), generator=g)
    rows = torch.arange(L).view(L, 1, 1)
    settled = rows >= settle
    random_top = torch.randint(0, V, (L, B, S, top_k), generator=g)
    random_top[..., 0] = torch.where(settled, final.expand(L, B, S), random_top[..., 0])
    p1 = (0.05 + 0.9 * depth**2 * (0.6 + 0.4 * torch.rand(L, B, S, generator=g))).clamp(max=0.99)
    rest = torch.rand(L, B, S, top_k - 1, generator=g).sort(dim=-1, descending=True).values
    rest = rest / rest.sum(-1, keepdim=True) * (1 - p1).unsqueeze(-1) * 0.7
    probs = torch.cat([p1.unsqueeze(-1), rest], dim=-1)
    predicted = random_top[..., 0]
    predicted_words = [
        [[words[t] for t in predicted[i, b].tolist()] for b in range(B)] for i in range(L)
    ]
    return LogitLensResult(
        all_probs=None,
        max_probs=p1,
        predicted_tokens=predicted,
        predicted_words=predicted_words,
        input_words=[[words[t] for t in input_ids[b].tolist()] for b in range(B)],
        attention_mask=torch.ones(B, S, dtype=torch.long),
        addresses=[Node(i) for i in range(L)],
        topk_tokens=random_top,
        topk_probs=probs,
        entropy=(1 - depth).expand(L, B, S) * 14 + 0.1,
        final_token_probs=torch.where(settled, p1, p1 * 0.1),
        final_token_ranks=torch.where(settled, 0, (L - rows).expand(L, B, S) * 5),
        kl_to_final=(1 - depth).expand(L, B, S) * 8,
        final_tokens=final,
        input_ids=input_ids,
        prompts=["".join(words[t] for t in input_ids[b].tolist()) for b in range(B)],
        token_strings=dict(enumerate(words)),
        vocab_size=50257,
        model_name="synthetic-80x1000",
    )
