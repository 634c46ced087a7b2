"""The logit difference per layer (``run_logit_lens(..., answers=, foils=)``'s ``logit_diff``)
against TransformerLens 4.3.0, computed as its "Exploratory Analysis Demo" computes it.

TransformerLens's side (``tl_side.py logit_diff``): the accumulated residual stream at each
prompt's last position, after each attention and after each block
(``cache.accumulated_resid(incl_mid=True, apply_ln=True, pos_slice=-1)``: the final norm
recomputed for every entry of the stack), times ``W_U[:, answer] - W_U[:, foil]``, in the
``plain`` mode (only the final norm's weights folded into ``W_U``, so that the numbers are the
plain model's). The demo's residual directions leave out the unembedding's bias (after folding:
the final norm's bias through ``W_U``): its difference ``b_U[answer] - b_U[foil]`` is added here.

This package's side: the same prompts in one padded batch, with
``sites=("resid_mid", "resid_post")``, so that its rows are TransformerLens's stack less its
first entry (the embeddings): ``L0.resid_mid`` is ``0_mid``, ``L0`` (block 0's output) is
``1_pre``, ..., the last block's output ``final_post``.

Bound: 1e-4 absolute, in logits (the differences here reach several logits; float32 over
d_model = 32).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from other_venv import run_side

from murano_widgets import run_logit_lens

pytestmark = pytest.mark.transformer_lens_interop

HERE = Path(__file__).resolve().parent
PROMPTS = [
    "The capital of France is",
    "Alice met Bob. Alice gave",
    "The Eiffel Tower is in the city of",
    "one two three four",
]
ANSWERS = [" Paris", " Bob", " Paris", " five"]
FOILS = [" Rome", " Alice", " Bob", " six"]
BOUND = 1e-4


def _continuation(tokenizer, prompt: str, text: str) -> int:
    alone = tokenizer(prompt)["input_ids"]
    together = tokenizer(prompt + text)["input_ids"]
    assert together[: len(alone)] == alone and len(together) > len(alone), (prompt, text)
    return together[len(alone)]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_the_logit_difference_is_transformer_lens_accumulated_residual(
    arch, tl_python, folders, models, work
):
    model = models[arch]
    tokenizer = model.tokenizer
    cases = {
        "ids": [tokenizer(p)["input_ids"] for p in PROMPTS],
        "answers": [_continuation(tokenizer, p, a) for p, a in zip(PROMPTS, ANSWERS, strict=True)],
        "foils": [_continuation(tokenizer, p, f) for p, f in zip(PROMPTS, FOILS, strict=True)],
    }
    (work / f"logit-diff-{arch}.json").write_text(json.dumps(cases))
    run_side(
        tl_python, HERE / "tl_side.py", "TransformerLens", "logit_diff",
        "--model", folders[arch], "--cases", str(work / f"logit-diff-{arch}.json"),
        "--out", str(work / f"logit-diff-{arch}.pt"),
    )  # fmt: skip
    theirs = torch.load(work / f"logit-diff-{arch}.pt", weights_only=True)
    ours = run_logit_lens(
        model, PROMPTS, answers=ANSWERS, foils=FOILS, sites=("resid_mid", "resid_post")
    )
    n_layers = model.n_layers
    for p, found in enumerate(theirs):
        labels = found["labels"]
        assert (
            labels[0] == "0_pre" and labels[-1] == "final_post" and len(labels) == 2 * n_layers + 1
        )
        answer, foil = cases["answers"][p], cases["foils"][p]
        bias = found["b_U"][answer] - found["b_U"][foil]
        expected = found["values"][1:] + bias
        last = int(ours.positions(p)[-1])
        got = ours.logit_diff[:, p, last]
        assert float(expected.abs().max()) > 0.3, "the differences are large enough to test"
        torch.testing.assert_close(got, expected, atol=BOUND, rtol=0)
