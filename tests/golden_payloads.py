"""Golden payloads: each widget's payload for a few small results, written for the JS tests.

Every case is built here from fixed numbers (no model, no random numbers), encoded by the
package's own encoders exactly as the widgets send it, and written to
``js/tests/golden/<widget>_<case>.json`` as ``{"meta", "sections", "expected"}``:

- ``meta``: the ``_meta`` trait;
- ``sections``: the ``_sections`` trait (``_data`` for the data set), each section base64 text as
  the HTML export writes it (the front end's ``toBytes`` reads it back);
- ``expected``: facts read from the *result* (the ``LogitLensResult``, the ``LensComparison``,
  the ``LensDataset``), not from the payload, so that ``node --test`` checks that the front end
  decodes what Python meant (``js/tests/golden.test.mjs``).

``tests/test_golden_payloads.py`` regenerates the cases and fails when a committed file differs:
after changing a payload, run ``.venv/bin/python tests/golden_payloads.py`` and make the front end
agree.

The lens cases follow simple formulas of their indices (row ``i`` of ``L``, column ``c`` of the
prompts laid end to end, ``n`` formula tokens), which the JS tests also use:

- input token ``(2c) mod n``; top-1 token ``(i + c) mod n`` with probability ``(i + 1) / L``;
  the top-k's rank ``r`` token ``(i + c + r) mod n`` with probability ``(20 - r + 1) / 255``
  (stored, as every probability, in steps of 1/65535: ``(21 - r) 257``);
- final prediction ``(L - 1 + c) mod n`` (so the last row is settled), its probability
  ``1000 i / 65535`` and its rank ``7 (L - 1 - i)``; KL ``0.04 (L - 1 - i)`` bits;
- entropy ``2.5 (L - i) + c / 8`` bits, over a vocabulary of 1000 tokens.

The answer cases add (values stored as ``raw / 65535`` for probabilities): the answer's
probability ``(i + 1) 1000 + 100 p + 10 s`` and rank ``30 (L - 1 - i) + p + s`` (prompt ``p``,
set ``s``), its first token's probability ``(i + 1) 2000 + c`` and rank ``5 (L - 1 - i) + c``,
and target ``j``'s probability ``(i + 1) 3000 + 10 c + j`` and rank ``400 (L - 1 - i) + 3c + j``.

The attribution cases (``lens_attribution``, ``lens_sublayers``, ``lens_attribution_cells``,
``lenses_attribution``; the "why" panel and the component view) give component ``k`` of row
``i`` at column ``c`` the part ``((3k + 5i + 7c + s) mod 13 - 6) / 4`` of the top-1's logit
(``s``: the lens's shift), target ``t`` the part ``((3k + 5i + 7c + 2t + 1) mod 13 - 6) / 4`` and
prompt ``p``'s answer (at its last position) ``((3k + 5i + 11p + 3) mod 13 - 6) / 4``; the bias
``((i + 2c) mod 5 - 2) / 8`` (``((i + p) mod 5 - 2) / 8`` for the answer); NaN for a component
after the row's point (``tests/attribution_data.py``), all exact in float32. ``lens_sublayers``
reads the stream after each layer's attention too (``resid_mid`` rows), with heads.
``lens_attribution_cells`` has the answer at every cell, as the step gives it
(``answer_token_*``): ``((3k + 5i + 7c + 11p + 3) mod 13 - 6) / 4``, bias
``((i + 2c + p) mod 5 - 2) / 8``; its payload sends no ``answer_row_*`` (their slice).

The rounding case (``lens_rounding``) is not a formula: its cells are distributions of a few
given probabilities (:data:`ROUNDING_TOPS`), every field computed from them, so that a number
the tooltip shows twice is the same float in both fields, and some are below 0.1 % or below half
a step.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import sys
import warnings
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import torch
from attribution_data import component_labels, present, with_sublayers

from murano_widgets.comparison.compare import LensComparison, compare
from murano_widgets.dataset.lens_dataset import LensDataset
from murano_widgets.lenses import title_of
from murano_widgets.metrics import DIFF_CHANGES, METRICS
from murano_widgets.payload.codec import section_bytes
from murano_widgets.payload.diff import diff_payload
from murano_widgets.payload.lens import LensPayload
from murano_widgets.results import AnswerScores, LensResults, LogitLensResult
from murano_widgets.types import Node
from murano_widgets.widgets.dataset import LensDatasetWidget

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "js" / "tests" / "golden"
NAN = float("nan")

# The formula tokens of the plain lens cases (ids 0..4).
PLAIN_TOKENS = ["a", " b", "\n", "<script>", "\u200f"]
# The answer cases: " Paris" must be id 3 (the top-1 at rows 1 and 2 of two of prompt 0's cells).
ANSWER_TOKENS = ["a", " b", "\n", " Paris", "\u200f", " Fr", "ench", " English", "<b>x</b>"]
CHAT_PROMPTS = [
    ["<|user|>", " Hi", " there", "<|assistant|>", " Hello", "!"],
    ["<|system|>", " Be", " brief", "<|end|>"],
]
CHAT_ROLES = [
    ["template", "user", "user", "template", "assistant", "assistant"],
    ["template", "system", "system", "template"],
]


# ---------------------------------------------------------------------------------------------
# Lens results


class _Grid:
    """Prompts of the given lengths, right-padded to one sequence length, and ``L`` rows."""

    def __init__(self, n_rows: int, lengths: list[int]) -> None:
        self.L = n_rows
        self.lengths = lengths
        self.B = len(lengths)
        self.S = max(lengths)
        self.columns = [(b, j) for b, n in enumerate(lengths) for j in range(n)]
        self.T = len(self.columns)

    def mask(self) -> torch.Tensor:
        mask = torch.zeros(self.B, self.S, dtype=torch.long)
        for b, n in enumerate(self.lengths):
            mask[b, :n] = 1
        return mask

    def cells(
        self, value: Callable[[int, int], Any], fill: Any, dtype: torch.dtype, skip=frozenset()
    ) -> torch.Tensor:
        """``[L, B, S, ...]`` with ``value(i, c)`` at each real cell not in ``skip``."""
        first = value(0, 0)
        tail = (len(first),) if isinstance(first, list) else ()
        out = torch.full((self.L, self.B, self.S, *tail), fill, dtype=dtype)
        for i in range(self.L):
            for c, (b, j) in enumerate(self.columns):
                if (i, c) not in skip:
                    out[i, b, j] = torch.tensor(value(i, c), dtype=dtype)
        return out

    def positions(self, value: Callable[[int], Any], fill: Any, dtype: torch.dtype) -> torch.Tensor:
        """``[B, S]`` with ``value(c)`` at each real position."""
        out = torch.full((self.B, self.S), fill, dtype=dtype)
        for c, (b, j) in enumerate(self.columns):
            out[b, j] = value(c)
        return out


def lens_result(
    *,
    tokens: list[str],
    lengths: list[int],
    n: int | None = None,
    inputs: Callable[[int], int] | None = None,
    n_model_layers: int = 3,
    final: bool = True,
    missing: frozenset = frozenset(),
    final_missing: frozenset = frozenset(),
    answers: Callable[[_Grid, frozenset], dict[str, AnswerScores]] | None = None,
    targets: list[str] | None = None,
    generation_starts: list[int] | None = None,
    generated_texts: list[str] | None = None,
    token_roles: list[list[str]] | None = None,
    shift: int = 0,
    lens_kind: str = "logit",
) -> LogitLensResult:
    """A result of layers 0, 1, 2 following the module's formulas.

    Args:
        tokens: The token table (id = index); the formulas cycle over its first ``n``.
        lengths: The prompts' lengths.
        inputs: Column → input token id (default ``(2c) mod n``).
        n_model_layers: The model's depth (3: row 2 is its last layer).
        final: Whether the result holds the final prediction and the final-based fields.
        missing: ``(row, column)`` cells whose distribution was not finite (no value at all).
        final_missing: Columns where the model's own output was not finite.
        answers: Builds the answer sets on the grid (given ``missing``).
        targets: Target strings (their ids: their first token in ``tokens``).
        shift: Another lens of the same prompts (lenses side by side): every row but the last
            (which no lens translates) predicts tokens ``shift`` further on, with top-1
            probability ``(i + 1) / (L + shift)``, and its answers are more likely.
        lens_kind: The lens's kind.
    """
    n = n or len(tokens)
    grid = _Grid(3, lengths)
    L = grid.L
    inputs = inputs or (lambda c: (2 * c) % n)
    k = 3

    def moved(i: int) -> int:
        return shift if i < L - 1 else 0

    topk_tokens = grid.cells(
        lambda i, c: [(i + c + r + moved(i)) % n for r in range(k)], -1, torch.long, missing
    )
    topk_probs = grid.cells(
        lambda i, c: [(i + 1) / (L + moved(i))] + [(20 - r + 1) / 255 for r in range(1, k)],
        NAN,
        torch.float32,
        missing,
    )
    predicted = topk_tokens[..., 0].clone()
    strings = dict(enumerate(tokens))
    fields: dict[str, Any] = {}
    if final:
        final_skip = missing | {(i, c) for i in range(L) for c in final_missing}
        fields = {
            "final_tokens": grid.positions(
                lambda c: -1 if c in final_missing else (L - 1 + c) % n, -1, torch.long
            ),
            "final_token_probs": grid.cells(
                lambda i, c: i * 1000 / 65535, NAN, torch.float32, final_skip
            ),
            "final_token_ranks": grid.cells(
                lambda i, c: (L - 1 - i) * 7, -1, torch.long, final_skip
            ),
            "kl_to_final": grid.cells(
                lambda i, c: 0.04 * (L - 1 - i), NAN, torch.float32, final_skip
            ),
        }
    input_ids = grid.positions(inputs, -1, torch.long)
    input_words = [
        [strings.get(int(t), "") if t >= 0 else "" for t in row] for row in input_ids.tolist()
    ]
    mask = grid.mask()
    result = LogitLensResult(
        all_probs=None,
        max_probs=topk_probs[..., 0].clone(),
        predicted_tokens=predicted,
        predicted_words=[
            [[strings[t] if t >= 0 else "" for t in row] for row in layer]
            for layer in predicted.tolist()
        ],
        input_words=input_words,
        attention_mask=mask,
        addresses=[Node(layer) for layer in range(L)],
        topk_tokens=topk_tokens,
        topk_probs=topk_probs,
        entropy=grid.cells(lambda i, c: 2.5 * (L - i) + c / 8, NAN, torch.float32, missing),
        input_ids=input_ids,
        prompts=[
            "".join(words[:n_real]) for words, n_real in zip(input_words, lengths, strict=True)
        ],
        token_strings=strings,
        vocab_size=1000,
        model_name="tiny-test",
        n_model_layers=n_model_layers,
        lens_kind=lens_kind,
        generation_starts=generation_starts,
        generated_texts=generated_texts,
        token_roles=token_roles,
        **fields,
    )
    if answers is not None:
        result.answer_sets = answers(grid, missing)
        if shift:  # another lens: the answers more likely at every row but the last
            for scores in result.answer_sets.values():
                scores.probs[:-1] = (scores.probs[:-1] + shift * 50 / 65535).float()
    if targets is not None:
        ids = {text: i for i, text in enumerate(tokens)}
        n_targets = len(targets)
        result.targets = list(targets)
        result.target_token_ids = [[ids[t]] for t in targets]
        result.target_probs = grid.cells(
            lambda i, c: [((i + 1) * 3000 + c * 10 + j) / 65535 for j in range(n_targets)],
            NAN,
            torch.float32,
            missing,
        )
        result.target_ranks = grid.cells(
            lambda i, c: [(L - 1 - i) * 400 + c * 3 + j for j in range(n_targets)],
            -1,
            torch.long,
            missing,
        )
    return result.validate()


def _answer_sets(grid: _Grid, missing: frozenset) -> dict[str, AnswerScores]:
    """Two sets: "capital" (prompt 1 has none) and "language" (a two-token answer first)."""
    L = grid.L
    sets = {
        "capital": ([[" Paris"], None], [[[3]], None]),
        "language": ([[" French"], [" English"]], [[[5, 6]], [[7]]]),
    }
    prompt_of = [b for b, _ in grid.columns]
    last = {b: offset for offset, (b, j) in enumerate(grid.columns) if j == grid.lengths[b] - 1}
    out = {}
    for s, (name, (answers, token_ids)) in enumerate(sets.items()):
        has = [a is not None for a in answers]

        def no_value(i: int, p: int, has=has) -> bool:
            return not has[p] or (i, last[p]) in missing

        probs = torch.tensor(
            [
                [
                    NAN if no_value(i, p) else ((i + 1) * 1000 + p * 100 + s * 10) / 65535
                    for p in range(grid.B)
                ]
                for i in range(L)
            ],
            dtype=torch.float32,
        )
        ranks = torch.tensor(
            [
                [-1 if no_value(i, p) else (L - 1 - i) * 30 + p + s for p in range(grid.B)]
                for i in range(L)
            ],
            dtype=torch.long,
        )
        skip = missing | {(i, c) for i in range(L) for c in range(grid.T) if not has[prompt_of[c]]}
        token_probs = grid.cells(
            lambda i, c, s=s: ((i + 1) * 2000 + c + 7 * s) / 65535, NAN, torch.float32, skip
        )
        token_ranks = grid.cells(lambda i, c, s=s: (L - 1 - i) * 5 + c + s, -1, torch.long, skip)
        out[name] = AnswerScores(answers, token_ids, probs, ranks, token_probs, token_ranks)
    return out


# The rounding case: one prompt, layers 0..2 of a 3-layer model, each cell a distribution over
# ROUNDING_VOCAB given by its top four probabilities (the other tokens share the rest evenly, each
# below the fourth). The numbers are a real model's where the issue saw them (0.023374, the demo
# model's " Paris" at rank 4 of layer 0) or small enough to test "<0.1%": 0.0004, 9e-5 and 3e-6
# (below half a uint16 step, 7.6e-6). The final prediction and the answer " Paris" sit at ranks 1
# to 3 of the earlier rows, so one probability is shown twice in a tooltip.
ROUNDING_VOCAB = [" the", " Paris", " a", " Rome", *(f" w{i}" for i in range(6)), "The", " capital"]
ROUNDING_TOPS = {
    (0, 0): {" a": 0.6, " the": 0.3, " Paris": 0.0999, " Rome": 0.00009},
    (1, 0): {" the": 0.5, " a": 0.4637, " Paris": 0.0362, " Rome": 0.00009},
    (2, 0): {" a": 0.8123, " the": 0.1, " Paris": 0.0876, " Rome": 0.00009},
    (0, 1): {" the": 0.9762, " Paris": 0.023374, " a": 0.0004, " Rome": 3e-6},
    (1, 1): {" the": 0.51996, " Paris": 0.4637, " a": 0.0162, " Rome": 0.0001},
    (2, 1): {" Paris": 0.8123, " the": 0.1, " a": 0.0876, " Rome": 0.00009},
}


def rounding_result() -> LogitLensResult:
    """The rounding case: every field follows from the cells' distributions (float64, stored as
    float32), so a number shown twice (a top-k entry that is also the final prediction or the
    answer) is the same float in both fields."""
    V, L, S = len(ROUNDING_VOCAB), 3, 2
    ids = {text: i for i, text in enumerate(ROUNDING_VOCAB)}
    probs = torch.zeros(L, 1, S, V, dtype=torch.float64)
    for (row, j), top in ROUNDING_TOPS.items():
        probs[row, 0, j] = (1.0 - sum(top.values())) / (V - len(top))
        for text, p in top.items():
            probs[row, 0, j, ids[text]] = p
    assert (probs[..., 4:] < probs.sort(-1, descending=True).values[..., 3:4]).all()
    order = torch.sort(probs, dim=-1, descending=True, stable=True)
    topk_tokens, topk_probs = order.indices[..., :4], order.values[..., :4]
    final = topk_tokens[-1, :, :, 0]
    final_probs = probs.gather(-1, final.expand(L, 1, S).unsqueeze(-1)).squeeze(-1)
    log2 = math.log(2.0)
    entropy = -(probs * probs.log()).sum(-1) / log2
    kl = (probs[-1:] * (probs[-1:].log() - probs.log())).sum(-1) / log2
    paris, rome = ids[" Paris"], ids[" Rome"]

    def rank_of(token: int) -> torch.Tensor:
        return (probs > probs[..., token : token + 1]).sum(-1)

    answer = AnswerScores(
        answers=[[" Paris"]],
        token_ids=[[[paris]]],
        probs=probs[:, :, -1, paris].float(),
        ranks=rank_of(paris)[:, :, -1],
        token_probs=probs[..., paris].float(),
        token_ranks=rank_of(paris),
    )
    words = [
        [[ROUNDING_VOCAB[t] for t in seq] for seq in layer]
        for layer in topk_tokens[..., 0].tolist()
    ]
    result = LogitLensResult(
        all_probs=None,
        max_probs=topk_probs[..., 0].float(),
        predicted_tokens=topk_tokens[..., 0].clone(),
        predicted_words=words,
        input_words=[["The", " capital"]],
        attention_mask=torch.ones(1, S, dtype=torch.long),
        addresses=[Node(layer) for layer in range(L)],
        topk_tokens=topk_tokens.clone(),
        topk_probs=topk_probs.float(),
        entropy=entropy.float(),
        final_token_probs=final_probs.float(),
        final_token_ranks=(probs > final_probs.unsqueeze(-1)).sum(-1),
        kl_to_final=kl.clamp_min(0.0).float(),
        final_tokens=final.clone(),
        input_ids=torch.tensor([[V - 2, V - 1]]),
        prompts=["The capital"],
        token_strings=dict(enumerate(ROUNDING_VOCAB)),
        vocab_size=V,
        model_name="tiny-test",
        n_model_layers=L,
        lens_kind="logit",
    )
    result.answer_sets = {"answer": answer}
    result.targets = [" Rome"]
    result.target_token_ids = [[rome]]
    result.target_probs = probs[..., rome : rome + 1].float()
    result.target_ranks = rank_of(rome).unsqueeze(-1)
    return result.validate()


# The token picker's case (``lens_picker``): 4 rows, two prompts (3 and 2 tokens), top-4 of a
# 10-token vocabulary; each cell's distribution a softmax of ``((3t + 5i + 7c) mod 11) (0.5 +
# 0.3 i) + 0.2 t c`` over tokens ``t`` (row ``i``, column ``c``), so that the tokens of a column's
# top-k differ from row to row and the last row's order is not the order of the best
# probabilities; row 1 of column 1 was not finite (it adds nothing).
PICKER_VOCAB = [" the", " Paris", " a", " Rome", " city", "<b>x</b>", " France", " is", "The"]
PICKER_VOCAB += [" of"]
PICKER_INPUTS = [[8, 4, 9], [8, 7]]
PICKER_MISSING = (1, 0, 1)  # (row, prompt, position)


def picker_result() -> LogitLensResult:
    """The picker's case: every field follows from the cells' distributions (as
    :func:`rounding_result`'s), one cell not finite."""
    V, L, k = len(PICKER_VOCAB), 4, 4
    lengths = [len(p) for p in PICKER_INPUTS]
    B, S = len(lengths), max(lengths)
    logits = torch.full((L, B, S, V), -30.0, dtype=torch.float64)
    c = 0
    for b, n in enumerate(lengths):
        for j in range(n):
            for i in range(L):
                for t in range(V):
                    spread = (3 * t + 5 * i + 7 * c) % 11
                    logits[i, b, j, t] = spread * (0.5 + 0.3 * i) + 0.2 * t * c
            c += 1
    probs = logits.softmax(-1)
    order = torch.sort(probs, dim=-1, descending=True, stable=True)
    topk_tokens, topk_probs = order.indices[..., :k].clone(), order.values[..., :k].float()
    final = topk_tokens[-1, :, :, 0].clone()
    final_probs = probs.gather(-1, final.expand(L, B, S).unsqueeze(-1)).squeeze(-1).float()
    final_ranks = (probs > probs.gather(-1, final.expand(L, B, S).unsqueeze(-1))).sum(-1)
    log2 = math.log(2.0)
    entropy = (-(probs * probs.log()).sum(-1) / log2).float()
    kl = ((probs[-1:] * (probs[-1:].log() - probs.log())).sum(-1) / log2).clamp_min(0.0).float()
    mask = torch.zeros(B, S, dtype=torch.long)
    input_ids = torch.full((B, S), -1, dtype=torch.long)
    for b, ids in enumerate(PICKER_INPUTS):
        mask[b, : len(ids)] = 1
        input_ids[b, : len(ids)] = torch.tensor(ids)
    pad = mask == 0
    i, b, j = PICKER_MISSING
    for field in (topk_probs, entropy, kl, final_probs):
        field[:, pad] = NAN
        field[i, b, j] = NAN
    topk_tokens[:, pad] = -1
    topk_tokens[i, b, j] = -1
    final_ranks[:, pad] = -1
    final_ranks[i, b, j] = -1
    final[pad] = -1
    words = [
        [[PICKER_VOCAB[t] if t >= 0 else "" for t in seq] for seq in layer]
        for layer in topk_tokens[..., 0].tolist()
    ]
    return LogitLensResult(
        all_probs=None,
        max_probs=topk_probs[..., 0].clone(),
        predicted_tokens=topk_tokens[..., 0].clone(),
        predicted_words=words,
        input_words=[
            [PICKER_VOCAB[t] for t in ids] + [""] * (S - len(ids)) for ids in PICKER_INPUTS
        ],
        attention_mask=mask,
        addresses=[Node(layer) for layer in range(L)],
        topk_tokens=topk_tokens,
        topk_probs=topk_probs,
        entropy=entropy,
        final_token_probs=final_probs,
        final_token_ranks=final_ranks,
        kl_to_final=kl,
        final_tokens=final,
        input_ids=input_ids,
        prompts=["".join(PICKER_VOCAB[t] for t in ids) for ids in PICKER_INPUTS],
        token_strings=dict(enumerate(PICKER_VOCAB)),
        vocab_size=V,
        model_name="tiny-test",
        n_model_layers=L,
        lens_kind="logit",
    ).validate()


def picker_expected(result: LogitLensResult) -> list[dict[str, Any]]:
    """The token picker's list for every column, from the result's floats: every token in a
    row's top-k, its best probability over the rows and the first row that has it, best first
    (ties: the earlier row, then the text). The probabilities of neighbours in a list differ by
    more than the payload's step, so the payload's rounding cannot change the order."""
    strings = result.token_strings or {}
    out = []
    for p in range(result.n_inputs):
        for j, seq in enumerate(result.positions(p).tolist()):
            best: dict[str, tuple[float, int]] = {}
            for row in range(len(result.layers)):
                for token, prob in zip(
                    result.topk_tokens[row, p, seq].tolist(),
                    result.topk_probs[row, p, seq].tolist(),
                    strict=True,
                ):
                    if token < 0 or not math.isfinite(prob):
                        continue
                    text = strings[token]
                    if text not in best or prob > best[text][0]:
                        best[text] = (prob, row)
            ranking = sorted(best.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
            for (_, (a, _)), (_, (b, _)) in pairwise(ranking):
                assert a - b > 2 / 65535, f"a near tie in the picker's case at ({p}, {j})"
            out.append(
                {
                    "prompt": p,
                    "position": j,
                    "tokens": [
                        {"token": text, "prob": prob, "row": row, "layer": result.layers[row]}
                        for text, (prob, row) in ranking
                    ],
                }
            )
    return out


def _chat_inputs() -> Callable[[int], int]:
    return lambda c: c  # the chat cases' tokens are their prompts' tokens, in order


def _with_logit_diff(result: LogitLensResult) -> LogitLensResult:
    """``result`` as a run with a foil for prompt 0 only: a logit difference at its cells that
    changes sign from cell to cell, NaN elsewhere."""
    shape = result.max_probs.shape
    values = torch.linspace(-7.25, 5.5, math.prod(shape)).reshape(shape)
    values[:, 1:] = float("nan")
    values[~result.attention_mask.bool().expand(shape)] = float("nan")
    return dataclasses.replace(result, logit_diff=values).validate()


GROUP_NAMES = ["paris", "<b>g</b> $&"]


def _with_groups(result: LogitLensResult, flip: bool = False) -> LogitLensResult:
    """``result`` as a run with two token groups (one with a hostile name): group ``g``'s
    probability at its cells spread over [0, 1] (from 0.97 to 0.04 with ``flip``), each group's apart,
    NaN at padding."""
    shape = (*result.max_probs.shape, len(GROUP_NAMES))
    # k / (n - 1) in float64, then float32: division is correctly rounded on every CPU path,
    # where float32 linspace is not (AVX2 and no-AVX kernels differed in a quantisation step).
    steps = torch.arange(math.prod(shape), dtype=torch.float64) / (math.prod(shape) - 1)
    # The flipped side is not 1 - steps: b - a would then be 1 - 2 * steps, landing on the
    # quantiser's half steps, where an FMA and a plain multiply round apart.
    values = (0.97 - 0.93 * steps if flip else steps).float().reshape(shape)
    values[~result.attention_mask.bool()[None, ..., None].expand(shape)] = float("nan")
    return dataclasses.replace(
        result,
        group_names=list(GROUP_NAMES),
        group_token_ids=[[[1, 2], [3]] for _ in range(result.n_inputs)],
        group_probs=values,
    ).validate()


def groups_expected(result: LogitLensResult) -> list[list[list[list[float]]]]:
    """Each prompt's group probabilities ``[row][position][group]`` at its real positions."""
    assert result.group_probs is not None
    return [result.group_probs[:, p, result.positions(p)].tolist() for p in range(result.n_inputs)]


def lens_cases() -> dict[str, LogitLensResult]:
    plain = {"tokens": PLAIN_TOKENS, "lengths": [3, 2]}
    answers = {
        "tokens": ANSWER_TOKENS,
        "n": 5,
        "lengths": [3, 2],
        "answers": _answer_sets,
        "targets": [" Paris", "<b>x</b>"],
    }
    chat = {
        "tokens": [t for prompt in CHAT_PROMPTS for t in prompt],
        "lengths": [len(p) for p in CHAT_PROMPTS],
        "inputs": _chat_inputs(),
    }
    return {
        "plain": lens_result(**plain),
        # The lens's logits at layer 2 were not finite for prompt 0 (a 4-layer model, so the
        # model's own output, from layer 3, is finite).
        "missing": lens_result(
            **plain, n_model_layers=4, missing=frozenset((2, c) for c in range(3))
        ),
        # The model's own output at prompt 0's position 1 was not finite.
        "final_missing": lens_result(**plain, final_missing=frozenset({1})),
        # Layers 0..2 of a 5-layer model, without its last layer: nothing final-based.
        "no_final": lens_result(**plain, n_model_layers=5, final=False),
        "answers": lens_result(**answers),
        # With foils: the logit difference (signed, float32), none for prompt 1 (no foil).
        "logit_diff": _with_logit_diff(lens_result(**answers)),
        # With token groups (and targets: the group and the token shown are two choices).
        "groups": _with_groups(lens_result(**answers)),
        # Row 1 of prompt 0 not finite, answers and targets included.
        "answers_missing": lens_result(**answers, missing=frozenset((1, c) for c in range(3))),
        "chat": lens_result(
            **chat,
            generation_starts=[4, 4],
            generated_texts=[" Hello!", ""],
            token_roles=CHAT_ROLES,
        ),
        "chat_no_generation": lens_result(**chat, token_roles=CHAT_ROLES),
        "chat_no_roles": lens_result(
            **chat, generation_starts=[4, 4], generated_texts=[" Hello!", ""]
        ),
        # A chat of template tokens only, and a prompt of user tokens only: nothing to hide.
        "roles_uniform": lens_result(**plain, token_roles=[["template"] * 3, ["user"] * 2]),
        # Probabilities as a real model's: one number in two places, and tiny ones.
        "rounding": rounding_result(),
        # The token picker's: top-4 tokens that change from row to row, one cell not finite.
        "picker": picker_result(),
    }


def decomposed(
    result: LogitLensResult,
    *,
    heads: int | None = None,
    softcap: float | None = None,
    foils: list[str | None] | None = None,
    shift: int = 0,
    answer_cells: bool = False,
) -> LogitLensResult:
    """``result`` (in place) with the module's attribution formulas (``decompose=True``).

    ``answer_cells``: the answer at every cell (``answer_token_*``, as the step now gives it;
    ``answer_row_*`` is then its last-position slice), else at the last position only (a result
    made before).
    """
    labels = component_labels(result.n_model_layers, heads)
    C = len(labels)
    R, B, S = result.max_probs.shape
    holds = np.stack([present(labels, node) for node in result.addresses])  # [R, C]
    mask = result.attention_mask.bool().numpy()
    column = np.full((B, S), -1)
    column[mask] = np.arange(int(mask.sum()))  # prompts laid end to end, as the payload does
    k = np.arange(C)
    i = np.arange(R)[:, None, None, None]
    c = column[None, :, :, None]
    parts = np.where(holds[:, None, None, :], ((3 * k + 5 * i + 7 * c + shift) % 13 - 6) / 4, NAN)
    parts = np.where(mask[None, :, :, None], parts, NAN)
    bias = np.where(mask[None], ((i[..., 0] + 2 * c[..., 0]) % 5 - 2) / 8, NAN)
    missing = ~np.isfinite(result.max_probs.numpy())
    parts[missing], bias[missing] = NAN, NAN
    result.component_labels = labels
    result.contributions = torch.tensor(parts, dtype=torch.float32)
    result.contribution_bias = torch.tensor(bias, dtype=torch.float32)
    result.top1_logits = torch.tensor(np.nansum(parts, -1) + bias, dtype=torch.float32)
    if result.targets:
        t = np.arange(len(result.targets))[None, None, None, :, None]
        target = ((3 * k + 5 * i[..., None] + 7 * c[..., None] + 2 * t + 1) % 13 - 6) / 4
        target = np.where(holds[:, None, None, None, :], target, NAN)
        target = np.where(mask[None, :, :, None, None] & ~missing[..., None, None], target, NAN)
        target_bias = np.where(
            np.isfinite(target[..., 0]), ((i + 2 * c + t[..., 0]) % 5 - 2) / 8, NAN
        )
        result.target_contributions = torch.tensor(target, dtype=torch.float32)
        result.target_bias = torch.tensor(target_bias, dtype=torch.float32)
    if result.answer_sets and answer_cells:
        has = np.array([a is not None for a in next(iter(result.answer_sets.values())).answers])
        p = np.arange(B)[None, :, None, None]
        answer = ((3 * k + 5 * i + 7 * c + 11 * p + 3) % 13 - 6) / 4
        answer = np.where(holds[:, None, None, :], answer, NAN)
        kept = mask[None] & has[None, :, None] & ~missing
        answer = np.where(kept[..., None], answer, NAN)
        answer_bias = np.where(kept, ((i[..., 0] + 2 * c[..., 0] + p[..., 0]) % 5 - 2) / 8, NAN)
        last = mask.sum(1) - 1  # right-padded
        result.answer_token_contributions = torch.tensor(answer, dtype=torch.float32)
        result.answer_token_bias = torch.tensor(answer_bias, dtype=torch.float32)
        at = (torch.arange(B), torch.from_numpy(last))
        result.answer_row_contributions = result.answer_token_contributions[:, at[0], at[1]]
        result.answer_row_bias = result.answer_token_bias[:, at[0], at[1]]
    elif result.answer_sets:
        p = np.arange(B)[None, :, None]
        has = np.array([a is not None for a in next(iter(result.answer_sets.values())).answers])
        answer = ((3 * k + 5 * i[..., 0] + 11 * p + 3) % 13 - 6) / 4
        answer = np.where(holds[:, None, :] & has[None, :, None], answer, NAN)
        answer_bias = np.where(has[None, :], ((i[..., 0, 0] + p[..., 0]) % 5 - 2) / 8, NAN)
        result.answer_row_contributions = torch.tensor(answer, dtype=torch.float32)
        result.answer_row_bias = torch.tensor(answer_bias, dtype=torch.float32)
    result.logit_softcap = softcap
    result.foils = foils
    return result


def attribution_cases() -> dict[str, LogitLensResult]:
    """The answers case with attribution (a foil for prompt 0), and the plain case with a row
    after each layer's attention, heads, a soft-cap and a row of prompt 0 not finite."""
    answers = {
        "tokens": ANSWER_TOKENS,
        "n": 5,
        "lengths": [3, 2],
        "answers": _answer_sets,
        "targets": [" Paris", "<b>x</b>"],
    }
    sublayers = with_sublayers(
        lens_result(
            tokens=PLAIN_TOKENS, lengths=[3, 2], missing=frozenset((1, c) for c in range(3))
        )
    )
    return {
        "attribution": decomposed(lens_result(**answers), foils=[" English", None]),
        "sublayers": decomposed(sublayers, heads=2, softcap=30.0),
        # The answer at every cell (as the step gives it), row 1 of prompt 0's position 1 not
        # finite.
        "attribution_cells": decomposed(
            lens_result(**answers, missing=frozenset({(1, 1)})),
            foils=[" English", None],
            answer_cells=True,
        ),
    }


def _present(name: str, value: Any) -> dict[str, Any]:
    """``{name: value}``, or ``{}`` for None."""
    return {} if value is None else {name: value}


def _finite(values: Any) -> Any:
    """Numbers as JSON keeps them: NaN as None."""
    return [None if not math.isfinite(v) else v for v in values]


def attribution_expected(result: LogitLensResult) -> dict[str, Any] | None:
    """Each cell's parts, bias and logit, read from the result's attribution fields: of its
    top-1, of each target; and each row's and prompt's answer parts (None: no answer)."""
    if getattr(result, "contributions", None) is None:
        return None

    def explained(parts: torch.Tensor, bias: float, total: float | None = None) -> dict:
        values = parts.tolist()
        if total is None:
            total = float(np.nansum(values) + bias)
        return {"values": _finite(values), "bias": bias, "total": total}

    cells = []
    for p in range(result.n_inputs):
        for row in range(len(result.addresses)):
            for j, seq in enumerate(result.positions(p).tolist()):
                cell = (row, p, seq)
                bias = float(result.contribution_bias[cell])
                if not math.isfinite(bias):
                    cells.append({"prompt": p, "row": row, "position": j, "top1": None})
                    continue
                targets = []
                for t in range(len(result.targets or [])):
                    targets.append(
                        explained(
                            result.target_contributions[(*cell, t)],
                            float(result.target_bias[(*cell, t)]),
                        )
                    )
                top1 = explained(result.contributions[cell], bias, float(result.top1_logits[cell]))
                entry = {"prompt": p, "row": row, "position": j, "top1": top1, "targets": targets}
                # The answer at every cell, where the result has it (None: no answer).
                if getattr(result, "answer_token_contributions", None) is not None:
                    answer_bias = float(result.answer_token_bias[cell])
                    entry["answer"] = (
                        explained(result.answer_token_contributions[cell], answer_bias)
                        if math.isfinite(answer_bias)
                        else None
                    )
                cells.append(entry)
    answers = None
    if getattr(result, "answer_row_contributions", None) is not None:
        answers = [
            [
                explained(result.answer_row_contributions[row, p], float(bias))
                if math.isfinite(bias)
                else None
                for p, bias in enumerate(result.answer_row_bias[row].tolist())
            ]
            for row in range(len(result.addresses))
        ]
    return {
        "components": result.component_labels,
        "addresses": [str(node) for node in result.addresses],
        "logit_softcap": result.logit_softcap,
        "foils": result.foils,
        "cells": cells,
        "answers": answers,
    }


def lenses_cases() -> dict[str, LensResults]:
    """Lenses side by side: two on the answers case (the second of another kind and title),
    and three on the plain case, the third with a row whose distribution was not finite."""
    answers = {
        "tokens": ANSWER_TOKENS,
        "n": 5,
        "lengths": [3, 2],
        "answers": _answer_sets,
        "targets": [" Paris", "<b>x</b>"],
    }
    plain = {"tokens": PLAIN_TOKENS, "lengths": [3, 2]}
    return {
        "answers": LensResults(
            {
                "logit": lens_result(**answers),
                "tuned": lens_result(**answers, shift=1, lens_kind="tuned"),
            }
        ),
        "three": LensResults(
            {
                "logit": lens_result(**plain),
                "tuned": lens_result(**plain, shift=1, lens_kind="tuned"),
                "jacobian": lens_result(
                    **plain, shift=2, lens_kind="jacobian", missing=frozenset({(0, 1)})
                ),
            }
        ),
        # Two lenses, each with its own attribution: the second's sections prefixed.
        "attribution": LensResults(
            {
                "logit": decomposed(lens_result(**answers)),
                "tuned": decomposed(lens_result(**answers, shift=1, lens_kind="tuned"), shift=1),
            }
        ),
    }


def lenses_expected(results: LensResults) -> dict[str, Any]:
    """Each lens's name, title and cells (as :func:`lens_expected` reads one lens)."""
    return {
        "lenses": [
            {
                "name": name,
                "title": title_of(result),
                **lens_expected(result),
                # Only where the lens has attribution: the other cases' files stay as they were.
                **_present("attribution", attribution_expected(result)),
            }
            for name, result in results.items()
        ]
    }


def _rank(value: Any) -> int | None:
    """A rank, or None for -1 (no value)."""
    return None if value is None or value < 0 else int(value)


def lens_expected(result: LogitLensResult) -> dict[str, Any]:
    """What each cell holds, read from the result (``describe_cell`` and its fields)."""
    strings = result.token_strings or {}
    first = next(iter((result.answer_sets or {}).values()), None)
    cells = []
    for p in range(result.n_inputs):
        seqs = result.positions(p).tolist()
        for row in range(len(result.layers)):
            for j, seq in enumerate(seqs):
                d = result.describe_cell(p, row, j)
                cell = (row, p, seq)
                missing = not math.isfinite(d["probability"])
                final = None
                if result.final_tokens is not None and int(result.final_tokens[p, seq]) >= 0:
                    final = strings[int(result.final_tokens[p, seq])]
                values = {
                    "max_probs": d["probability"],
                    "entropy": d.get("entropy"),
                    "final_token_probs": d.get("final_token_probs"),
                    "final_token_ranks": _rank(d.get("final_token_ranks")),
                    "kl_to_final": d.get("kl_to_final"),
                }
                if result.logit_diff is not None:
                    values["logit_diff"] = d.get("logit_diff")
                if result.group_probs is not None:  # the first group (the view's default)
                    values["group_probs"] = float(result.group_probs[cell][0])
                answer_top1 = None
                if first is not None:
                    top1 = int(result.predicted_tokens[cell])
                    answer_top1 = not missing and top1 in first.first_token_ids[p]
                    values["answer_token_probs"] = float(first.token_probs[cell])
                    values["answer_token_ranks"] = _rank(int(first.token_ranks[cell]))
                cells.append(
                    {
                        "prompt": p,
                        "row": row,
                        "layer": d["layer"],
                        "position": j,
                        "input": d["input_token"],
                        "missing": missing,
                        "top1": None if missing else d["predicted_token"],
                        "top_k": d.get("top_k", []),
                        "final": final,
                        "values": values,
                        "targets": [
                            [v["prob"], _rank(v["rank"])] for v in d.get("targets", {}).values()
                        ],
                        "answer_top1": answer_top1,
                        "generated": d.get("generated"),
                        "role": d.get("role"),
                    }
                )
    return {
        "layers": result.layers,
        "lengths": result.lengths,
        "prompts": result.prompts,
        "vocab_size": result.vocab_size,
        # A metric that needs what the run was not given (foils) is not listed.
        "metrics": [
            name
            for name, metric in METRICS.items()
            if not metric.needs or getattr(result, metric.field, None) is not None
        ],
        "targets": result.targets or [],
        "answer_sets": [
            {
                "name": name,
                "answers": [None if a is None else a[0] for a in scores.answers],
                "probs": scores.probs.tolist(),
                "ranks": [[_rank(r) for r in row] for row in scores.ranks.tolist()],
            }
            for name, scores in (result.answer_sets or {}).items()
        ],
        "cells": cells,
    }


# ---------------------------------------------------------------------------------------------
# Lens comparisons

DIFF_VOCAB = [
    " Paris",
    " Rome",
    "<b>x</b>",
    "The",
    " city",
    " London",
    " is",
    ".",
    " the",
    " of",
    " a",
    ",",
]
_ID = {text: i for i, text in enumerate(DIFF_VOCAB)}


def dist_result(
    prompt: list[str],
    layers: list[int],
    n_model_layers: int,
    tops: dict[tuple[int, int], dict[str, float]],
    model_name: str,
    full: bool = True,
) -> LogitLensResult:
    """One prompt; each cell's distribution is ``tops[(row, position)]``, the other tokens
    sharing the rest evenly; top-1, top-2, the final prediction (the last row's top-1, which is
    the model's last layer) and its probability and rank follow from it."""
    V, S, L = len(DIFF_VOCAB), len(prompt), len(layers)
    assert layers[-1] == n_model_layers - 1
    probs = torch.zeros(L, 1, S, V, dtype=torch.float64)
    for (row, j), top in tops.items():
        rest = (1.0 - sum(top.values())) / (V - len(top))
        probs[row, 0, j] = rest
        for text, p in top.items():
            probs[row, 0, j, _ID[text]] = p
    probs = probs.float()
    order = torch.sort(probs, dim=-1, descending=True, stable=True)
    topk_tokens, topk_probs = order.indices[..., :2].clone(), order.values[..., :2].clone()
    final = topk_tokens[-1, :, :, 0].clone()
    final_probs = probs.gather(-1, final.expand(L, 1, S).unsqueeze(-1)).squeeze(-1)
    ranks = (probs > final_probs.unsqueeze(-1)).sum(-1)
    words = [
        [[DIFF_VOCAB[t] for t in seq] for seq in layer] for layer in topk_tokens[..., 0].tolist()
    ]
    # Entropy and KL(final ‖ layer) in bits, summed with math.fsum (not the CPU's vector units).
    entropy = torch.zeros(L, 1, S)
    kl_to_final = torch.zeros(L, 1, S)
    for row in range(L):
        for j in range(S):
            p = probs[row, 0, j].double().tolist()
            final_p = probs[-1, 0, j].double().tolist()
            entropy[row, 0, j] = -math.fsum(x * math.log2(x) for x in p if x > 0)
            kl_to_final[row, 0, j] = max(
                0.0,
                math.fsum(
                    f * (math.log2(f) - math.log2(x))
                    for f, x in zip(final_p, p, strict=True)
                    if f > 0
                ),
            )
    return LogitLensResult(
        all_probs=probs if full else None,
        max_probs=topk_probs[..., 0].clone(),
        predicted_tokens=topk_tokens[..., 0].clone(),
        predicted_words=words,
        input_words=[list(prompt)],
        attention_mask=torch.ones(1, S, dtype=torch.long),
        addresses=[Node(layer) for layer in layers],
        topk_tokens=topk_tokens,
        topk_probs=topk_probs,
        final_token_probs=final_probs,
        final_token_ranks=ranks,
        entropy=entropy,
        kl_to_final=kl_to_final,
        final_tokens=final,
        input_ids=torch.tensor([[_ID[t] for t in prompt]]),
        prompts=["".join(prompt)],
        token_strings=dict(enumerate(DIFF_VOCAB)),
        vocab_size=V,
        model_name=model_name,
        n_model_layers=n_model_layers,
        lens_kind="logit",
    ).validate()


def _exact_kl(comparison: LensComparison) -> torch.Tensor:
    """KL(a ‖ b) in bits with ``math.fsum``, so the file does not depend on the CPU's vector
    units (``compare`` sums in float32 with torch); equal to ``compare``'s up to rounding."""
    a, b = comparison.a, comparison.b
    kl = torch.full(tuple(comparison.delta_prob.shape), NAN, dtype=torch.float64)
    for row, row_b in enumerate(comparison.layer_rows):
        for p in range(a.n_inputs):
            for seq in range(a.attention_mask.shape[1]):
                seq_b = int(comparison.positions[p, seq])
                if row_b < 0 or seq_b < 0 or not bool(comparison.aligned[row, p, seq]):
                    continue
                pa = a.all_probs[row, p, seq].double().tolist()
                pb = b.all_probs[row_b, p, seq_b].double().tolist()
                kl[row, p, seq] = max(
                    0.0,
                    math.fsum(
                        x * (math.log(x) - math.log(y))
                        for x, y in zip(pa, pb, strict=True)
                        if x > 0
                    ),
                ) / math.log(2.0)
    return kl.float()


def diff_cases() -> dict[str, LensComparison]:
    prompt_a = ["The", " city", "<b>x</b>"]
    a_tops = {
        (0, 0): {" Paris": 0.75, " Rome": 0.125},
        (0, 1): {" Rome": 0.5, " Paris": 0.375},
        (0, 2): {"<b>x</b>": 0.5, " Paris": 0.25},
        (1, 0): {" Paris": 0.125, " Rome": 0.1},
        (1, 1): {" Paris": 0.25, " Rome": 0.125},
        (1, 2): {" Paris": 0.5, " Rome": 0.25},
    }
    a = dist_result(prompt_a, [0, 1], 2, a_tops, "small")
    # b reads "The city": its positions pair with a's first two (the shared prefix).
    b = dist_result(
        ["The", " city"],
        [0, 1],
        2,
        {
            (0, 0): {" Paris": 0.25, " Rome": 0.125},
            (0, 1): {" Rome": 0.5, " Paris": 0.375},
            (1, 0): {" Rome": 0.5, " Paris": 0.375},
            (1, 1): {" Paris": 0.75, " Rome": 0.125},
        },
        "big",
    )
    # A 5-layer model on the same prompt, layers 0 and 4 (a's 0 and 1 by relative depth), and
    # without full distributions: no KL; the chosen token's probability from its top-2.
    deep = dist_result(
        prompt_a,
        [0, 4],
        5,
        {
            (0, 0): {" Paris": 0.5, " Rome": 0.25},
            (0, 1): {" Rome": 0.5, " Paris": 0.25},
            (0, 2): {"<b>x</b>": 0.5, " Paris": 0.25},
            (1, 0): {" Rome": 0.5, " Paris": 0.375},
            (1, 1): {" Paris": 0.75, " Rome": 0.125},
            (1, 2): {" Paris": 0.625, "<b>x</b>": 0.25},
        },
        "big",
        full=False,
    )
    prefix = compare(a, b, align="prefix")
    grouped = compare(_with_groups(a), _with_groups(b, flip=True), align="prefix")
    return {
        "prefix": dataclasses.replace(prefix, kl_a_to_b=_exact_kl(prefix)),
        "depth": compare(a, deep, align="tokens"),
        # Both sides with token groups: each group's change in probability (the KL exact, as
        # for "prefix": float32 log and exp round apart on AVX2 and no-AVX kernels).
        "groups": dataclasses.replace(grouped, kl_a_to_b=_exact_kl(grouped)),
    }


def group_changes_expected(comparison: LensComparison) -> dict[str, list[Any]]:
    """Each group's ``[a, b, b - a]`` per cell (prompt, row, position in order), read at the
    partner cell each description names; None where the cell has no partner."""
    a, b = comparison.a, comparison.b
    assert a.group_probs is not None and b.group_probs is not None and a.group_names
    out: dict[str, list[Any]] = {name: [] for name in a.group_names}
    for p in range(a.n_inputs):
        for row in range(len(a.layers)):
            for j in range(a.lengths[p]):
                d = comparison.describe_cell(p, row, j)
                for g, name in enumerate(a.group_names):
                    if not d["aligned"] or d["b"] is None:
                        out[name].append(None)
                        continue
                    va = float(a.group_probs[row, p, d["a"]["sequence_index"], g])
                    partner = (d["b"]["layer_index"], p, d["b"]["sequence_index"])
                    vb = float(b.group_probs[partner][b.group_names.index(name)])
                    out[name].append([va, vb, vb - va])
    return out


def diff_expected(comparison: LensComparison, k: int) -> dict[str, Any]:
    a, b = comparison.a, comparison.b

    # Each heatmap metric's two sides and change, from the results' fields by plain indexing
    # (a at the cell, b at the partner cell its description names): None where either side has
    # no value (a NaN, a rank's -1) or the cell has no partner.
    fields = {
        name: metric.field
        for name, metric in DIFF_CHANGES.items()
        if getattr(a, metric.field) is not None and getattr(b, metric.field) is not None
    }

    def value(result: LogitLensResult, field: str, row: int, p: int, seq: int) -> float | None:
        values = getattr(result, field)
        x = float(values[row, p, seq])
        no_rank = not values.dtype.is_floating_point and x < 0
        return None if math.isnan(x) or no_rank else x

    def change(field: str, d: dict[str, Any], row: int, p: int) -> list[float | None]:
        if not d["aligned"] or d["b"] is None:
            return [None, None, None]
        va = value(a, field, row, p, d["a"]["sequence_index"])
        vb = value(b, field, d["b"]["layer_index"], p, d["b"]["sequence_index"])
        return [None, None, None] if va is None or vb is None else [va, vb, vb - va]

    cells = []
    for p in range(a.n_inputs):
        for row in range(len(a.layers)):
            for j in range(a.lengths[p]):
                d = comparison.describe_cell(p, row, j)
                side_b = d["b"]
                position_b = None if side_b is None else side_b["position"]
                cells.append(
                    {
                        "prompt": p,
                        "row": row,
                        "position": j,
                        "aligned": d["aligned"],
                        "delta_prob": d["delta_prob"],
                        "token_prob_a": d["token_prob_a"],
                        "token_prob_b": d["token_prob_b"],
                        "kl_a_to_b": d["kl_a_to_b"],
                        "top1_differs": d["top1_differs"],
                        "token": d["token"],
                        "input_a": d["a"]["input_token"],
                        "input_b": None if side_b is None else side_b["input_token"],
                        "position_b": position_b,
                        "top_a": d["a"]["top_k"][:k],
                        "top_b": [] if side_b is None else side_b["top_k"][:k],
                        "changes": {
                            name: change(field, d, row, p) for name, field in fields.items()
                        },
                    }
                )
    return {
        "labels": list(comparison.labels),
        "layers": a.layers,
        "b_layers": comparison.b_layers,
        "depth_a": a.n_model_layers,
        "depth_b": b.n_model_layers,
        "align": comparison.align,
        "kl": comparison.kl_a_to_b is not None,
        "cells": cells,
    }


# ---------------------------------------------------------------------------------------------
# Data sets


def dataset_cases() -> dict[str, tuple[LensDataset, float]]:
    """Data sets of 4 prompts and 2 layers (eighths, so the bootstrap's sums are exact)."""
    prompts = [
        "The capital of France is",
        "The capital of Italy is",
        "<img src=x onerror=alert(1)>",
        "The capital of Norway is",
    ]
    # Prompt 2 has no capital; prompt 3's cell at layer column 1 was not finite.
    capital = [[" Paris"], [" Rome", " Roma"], None, [" Oslo"]]
    capital_probs = [[0.125, 0.875], [0.25, 0.625], [NAN, NAN], [0.5, NAN]]
    capital_ranks = [[5, 0], [1, 0], [-1, -1], [0, -1]]
    language = [[" French"], [" Italian"], [" HTML"], None]
    language_probs = [[0.0625, 0.5], [0.125, 0.75], [0.25, 0.375], [NAN, NAN]]
    language_ranks = [[12, 1], [3, 0], [2, 1], [-1, -1]]

    # Written one row per prompt; a data set holds [n_layers, n_prompts].
    def grid(rows, dtype):
        return np.ascontiguousarray(np.array(rows, dtype).T)

    common = {
        "prompts": prompts,
        "layers": [3, 7],
        "entropy": grid([[6.5, 1.25], [7.0, 2.0], [5.5, 3.5], [6.0, NAN]], np.float32),
        "kl_to_final": grid([[3.0, 0.25], [2.5, 0.125], [4.0, 1.0], [3.5, NAN]], np.float32),
        "final_token_probs": grid(
            [[0.125, 0.75], [0.25, 0.5], [0.0, 0.5], [0.25, NAN]], np.float32
        ),
        "final_token_ranks": grid([[40, 0], [7, 1], [120, 0], [3, -1]], np.int32),
        "top1_tokens": grid([[2, 0], [2, 1], [3, 3], [0, -1]], np.int32),
        "token_strings": {0: " Paris", 1: " Rome", 2: " the", 3: "<"},
        "provenance": {"model_name": "org/synthetic-8", "lens_kind": "logit", "n_model_layers": 8},
    }
    two = LensDataset(
        answers={"capital": capital, "language": language},
        answer_probs={
            "capital": grid(capital_probs, np.float32),
            "language": grid(language_probs, np.float32),
        },
        answer_ranks={
            "capital": grid(capital_ranks, np.int32),
            "language": grid(language_ranks, np.int32),
        },
        named_sets=True,
        **common,
    )
    one = LensDataset(
        answers={"answer": capital},
        answer_probs={"answer": grid(capital_probs, np.float32)},
        answer_ranks={"answer": grid(capital_ranks, np.int32)},
        named_sets=False,
        **common,
    )
    # A second lens over the same prompts: the answers commit earlier (rank 0 at column 0 of
    # prompts 0 and 1), prompt 3's cell at column 1 has a value.
    tuned = LensDataset(
        answers={"capital": capital, "language": language},
        answer_probs={
            "capital": grid([[0.625, 0.875], [0.75, 0.625], [NAN, NAN], [0.5, 0.5]], np.float32),
            "language": grid([[0.25, 0.5], [0.5, 0.75], [0.125, 0.375], [NAN, NAN]], np.float32),
        },
        answer_ranks={
            "capital": grid([[0, 0], [0, 0], [-1, -1], [0, 1]], np.int32),
            "language": grid([[1, 1], [0, 0], [4, 1], [-1, -1]], np.int32),
        },
        named_sets=True,
        **{**common, "provenance": {**common["provenance"], "lens_kind": "tuned"}},
    )
    lenses = LensDataset(
        prompts=prompts,
        layers=[3, 7],
        answers={"capital": capital, "language": language},
        token_strings=common["token_strings"],
        provenance={
            "model_name": "org/synthetic-8",
            "n_model_layers": 8,
            "lenses": [
                {"name": "logit", "kind": "logit", "title": "Logit lens", "provenance": None},
                {"name": "tuned", "kind": "tuned", "title": "Tuned lens", "provenance": None},
            ],
        },
        named_sets=True,
        lenses={"logit": two.arrays(), "tuned": tuned.arrays()},
    )
    return {"two_sets": (two, 0.9), "one_set": (one, 0.95), "lenses": (lenses, 0.9)}


def dataset_expected(dataset: LensDataset, ci: float) -> dict[str, Any]:
    titles = {entry["name"]: entry["title"] for entry in dataset.provenance.get("lenses", [])}
    sets = []
    for lens in dataset.lens_names or [None]:
        part = dataset if lens is None else dataset.lens(lens)
        for name, forms in part.answers.items():
            # One row per prompt, as the chart's payload holds them.
            probs = part.answer_probs[name].T.astype(np.float64)
            ranks = part.answer_ranks[name].T
            has = np.array([f is not None for f in forms])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a layer where every value is NaN
                mean = np.nanmean(probs[has], axis=0)
            # Committed at column l: the answer is the top-1 at l and at every later column.
            committed = [
                float(np.mean([all(r == 0 for r in row[l:]) for row in ranks[has]]))
                for l in range(len(part.layers))  # noqa: E741
            ]
            sets.append(
                {
                    "name": name,
                    "lens": lens,
                    "label": name if lens is None else f"{name} · {titles[lens]}",
                    "answers": [None if f is None else f[0] for f in forms],
                    "n_prompts": int(has.sum()),
                    "probs": probs.tolist(),
                    "ranks": ranks.tolist(),
                    "mean": mean.tolist(),
                    "committed": committed,
                }
            )
    return {
        "layers": dataset.layers,
        "prompts": dataset.prompts,
        "ci": ci,
        "can_open": False,
        "lenses": [{"name": name, "title": titles[name]} for name in dataset.lens_names or []],
        "sets": sets,
    }


# ---------------------------------------------------------------------------------------------
# Files


def _b64(sections: dict[str, bytes]) -> dict[str, str]:
    return {name: base64.b64encode(data).decode("ascii") for name, data in sections.items()}


def _plain(value: Any) -> Any:
    """JSON-able: NaN → None, tuples → lists, numpy scalars → Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def cases() -> dict[str, dict[str, Any]]:
    """Every golden case by file name (without ``.json``)."""
    out: dict[str, dict[str, Any]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a case that warns is a mistake in the case
        for name, result in lens_cases().items():
            payload = LensPayload.from_result(result)
            expected = lens_expected(result)
            if name == "picker":
                expected["picker"] = picker_expected(result)
            if name == "groups":
                expected["group_probs"] = groups_expected(result)
            out[f"lens_{name}"] = {
                "meta": payload.meta,
                "sections": _b64(payload.all_sections()),
                "expected": expected,
            }
        for name, result in attribution_cases().items():
            payload = LensPayload.from_result(result)
            out[f"lens_{name}"] = {
                "meta": payload.meta,
                "sections": _b64(payload.all_sections()),
                "expected": {
                    **lens_expected(result),
                    "attribution": attribution_expected(result),
                },
            }
        for name, results in lenses_cases().items():
            payload = LensPayload.from_result(results)
            out[f"lenses_{name}"] = {
                "meta": payload.meta,
                "sections": _b64(payload.all_sections()),
                "expected": lenses_expected(results),
            }
        for name, comparison in diff_cases().items():
            meta, arrays = diff_payload(comparison)
            out[f"diff_{name}"] = {
                "meta": meta,
                "sections": _b64(section_bytes(arrays)),
                "expected": {
                    **diff_expected(comparison, meta["top_k"]),
                    **_present(
                        "group_changes",
                        group_changes_expected(comparison) if comparison.a.group_names else None,
                    ),
                },
            }
        for name, (dataset, ci) in dataset_cases().items():
            chart = LensDatasetWidget(dataset, ci=ci, n_boot=200, seed=0).chart
            out[f"dataset_{name}"] = {
                "meta": chart._meta,
                "sections": _b64(chart._data),
                "expected": dataset_expected(dataset, ci),
            }
    return {name: _plain(case) for name, case in out.items()}


def render(case: dict[str, Any]) -> str:
    """A case as its file's text: sorted keys, indent 1, ASCII, a trailing newline."""
    return json.dumps(case, sort_keys=True, indent=1, allow_nan=False) + "\n"


def main() -> int:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    built = cases()
    for stale in sorted(set(GOLDEN_DIR.glob("*.json")) - {GOLDEN_DIR / f"{n}.json" for n in built}):
        stale.unlink()
        print(f"removed {stale.name}")
    for name, case in built.items():
        path = GOLDEN_DIR / f"{name}.json"
        text = render(case)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            print(f"wrote {path.relative_to(GOLDEN_DIR.parents[2])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
