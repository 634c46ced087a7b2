"""Direct logit attribution (issue 23) against the real TransformerLens 4.3.0
``transformer_lens.tools.analysis.direct_logit_attribution``:
``LogitLens(model, decompose=True, heads=False|True)`` on ``PromptBatch(prompts, answers=...,
foils=None|...)`` gives ``component_labels``, ``answer_contributions [C, n_inputs]`` and
``answer_contribution_bias``, which equal TransformerLens's ``unit="component"`` and
``unit="head"`` attributions (without and with ``incorrect_tokens`` = the foils) and its folded
``b_U`` within 1e-4, and sum to its model's logit.

Both packages read the same tiny GPT-2 and Llama folders (the suite's, and an "affine" copy of
each whose biases and norm weights are random, where the conventions about biases and norm
weights stop being vacuous), on prompts of different lengths, at each prompt's last position;
TransformerLens one prompt at a time (``tl_side.py dla``), this package in one padded batch.

What TransformerLens's numbers mean (read from its source, checked here):

- DLA refuses a bridge outside compatibility mode or with a learned final-norm weight or bias, so
  the final norm must be folded into ``W_U``/``b_U`` (``fold_ln``); ``logit_attrs`` then
  linearises it at each position's own residual (``apply_ln_to_stack``: centre each component
  under LayerNorm, divide by the cached scale): the contract's readout.
- ``enable_compatibility_mode()``'s defaults change what the numbers mean: ``center_unembed``
  subtracts the vocabulary mean from ``W_U`` (a component's number becomes its contribution
  minus its mean contribution over the vocabulary: cancels in answer − foil, not for one token);
  ``fold_value_biases`` moves each head's ``b_V @ W_O[h]`` (with ln_1's bias through ``W_V``,
  folded into ``b_V`` by ``fold_ln``) from the head into the layer's output bias;
  ``center_writing_weights`` (LayerNorm only) centres every write over d_model, which the final
  LayerNorm's centring makes a no-op. All three can be turned off and DLA still runs: ``plain``
  mode (``tl_side.MODES``) does, and TransformerLens then computes the plain model's
  quantities, which the contract's are. The defaults are reconciled too (``default`` mode):
  the reference, recentred over the vocabulary and with the value biases moved, equals them.
- Units: ``component`` gives ``embed``, ``pos_embed`` (GPT-2 only), ``{l}_attn_out`` (the
  output projection's bias included) and ``{l}_mlp_out``; ``head`` gives ``L{l}H{h}`` and
  ``remainder`` (everything but the heads). Ours are summed into those units
  (``dla_reference.to_transformer_lens``), each used exactly once.
- The attribution leaves out ``b_U`` (after folding: the final norm's bias through ``W_U`` plus
  the unembedding's own bias): the contract's bias term, compared with ``b_U`` here.

The independent reference (``dla_reference.decompose``: plain transformers, hooks on the output
projections and MLPs) is checked against TransformerLens too, so that a disagreement of the
package with TransformerLens can be told from one of TransformerLens with the model.

Bound: 1e-4, absolute, in logits. Every logit and contribution here is of order one (per case,
over its prompts, the largest |contribution| is 1.2 to 3.6 and the largest |logit| (or logit
difference) 1.5 to 5; TransformerLens's values are asserted to reach 0.3 so that the bound means
something), so absolute and relative to the logit scale differ by a factor of at most 5 here,
and an absolute bound reads in the unit a user sees. Float32 rounding over d_model = 32 puts the
measured differences at 1e-6 to 4e-6.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from dla_reference import (
    Decomposition,
    build_affine_variant,
    decompose,
    merge_embeddings,
    to_transformer_lens,
)
from other_venv import run_side
from tiny_models import build_tiny_model

pytestmark = pytest.mark.transformer_lens_interop

HERE = Path(__file__).resolve().parent
ARCHS = ["gpt2", "llama"]  # the conftest's folders
VARIANTS = ["plain", "affine"]
UNITS = {"component": False, "head": True}  # TransformerLens's unit: our heads=
FOILED = {"single": False, "diff": True}  # the answer's logit; answer − foil
# Prompts of different lengths (8 to 19 tokens in the tiny tokenizer): ours pads them.
PROMPTS = [
    "The capital of France is",
    "Alice met Bob. Alice gave",
    "The Eiffel Tower is in the city of",
    "one two three four",
]
ANSWERS = [" Paris", " Bob", " Paris", " five"]
FOILS = [" Rome", " Alice", " Bob", " six"]
BOUND = 1e-4
SCALE_FLOOR = 0.3


def _continuation(tokenizer, prompt: str, text: str) -> int:
    """The first token ``text`` adds after ``prompt`` (the contract's answer token); these
    texts do not merge into the prompt's last token, which is checked."""
    alone = tokenizer(prompt)["input_ids"]
    together = tokenizer(prompt + text)["input_ids"]
    assert together[: len(alone)] == alone and len(together) > len(alone), (prompt, text)
    return together[len(alone)]


@pytest.fixture(scope="session")
def dla_folders(folders, work) -> dict[tuple[str, str], str]:
    out = {(arch, "plain"): folder for arch, folder in folders.items()}
    for arch in ARCHS:
        folder = build_tiny_model(arch, work / f"{arch}-affine")
        out[(arch, "affine")] = str(build_affine_variant(folder))
    return out


@pytest.fixture(scope="session")
def cases(dla_folders) -> dict[tuple[str, str], dict]:
    """Per folder: the prompts' token ids, the answers' and the foils' first tokens."""
    from transformers import AutoTokenizer

    out = {}
    for key, folder in dla_folders.items():
        tokenizer = AutoTokenizer.from_pretrained(folder)
        answers = [_continuation(tokenizer, p, a) for p, a in zip(PROMPTS, ANSWERS, strict=True)]
        foils = [_continuation(tokenizer, p, f) for p, f in zip(PROMPTS, FOILS, strict=True)]
        assert all(a != f for a, f in zip(answers, foils, strict=True))
        ids = [tokenizer(p)["input_ids"] for p in PROMPTS]
        assert len({len(row) for row in ids}) == len(ids)  # all different lengths
        out[key] = {"ids": ids, "answers": answers, "foils": foils}
    return out


@pytest.fixture(scope="session")
def tl_dla(tl_python, dla_folders, cases, work):
    """``(arch, variant, mode) -> [per prompt: {unit_labels, unit_single, unit_diff, b_U,
    logits}]``, TransformerLens's own numbers, computed once each."""
    found: dict = {}

    def get(arch: str, variant: str, mode: str) -> list[dict]:
        key = (arch, variant, mode)
        if key not in found:
            name = f"dla-{arch}-{variant}-{mode}"
            (work / f"{name}.json").write_text(json.dumps(cases[(arch, variant)]))
            run_side(
                tl_python, HERE / "tl_side.py", "TransformerLens", "dla",
                "--model", dla_folders[(arch, variant)], "--cases", str(work / f"{name}.json"),
                "--mode", mode, "--out", str(work / f"{name}.pt"),
            )  # fmt: skip
            found[key] = torch.load(work / f"{name}.pt", weights_only=True)
        return found[key]

    return get


@pytest.fixture(scope="session")
def reference(dla_folders, cases):
    """``(arch, variant, heads) -> [per prompt: Decomposition]`` in plain transformers."""
    from transformers import AutoModelForCausalLM

    found: dict = {}

    def get(arch: str, variant: str, heads: bool) -> list[Decomposition]:
        key = (arch, variant, heads)
        if key not in found:
            model = AutoModelForCausalLM.from_pretrained(
                dla_folders[(arch, variant)], dtype=torch.float32
            ).eval()
            found[key] = [decompose(model, ids, heads) for ids in cases[(arch, variant)]["ids"]]
        return found[key]

    return get


def _assert_close(ours: torch.Tensor, theirs: torch.Tensor, labels: list[str], what: str) -> float:
    """The largest difference, asserted within BOUND."""
    ours, theirs = ours.double(), theirs.double()
    difference = (ours - theirs).abs()
    worst = int(difference.argmax())
    assert float(difference[worst]) <= BOUND, (
        f"{what}: {labels[worst]} differs by {float(difference[worst]):.3g} "
        f"(ours {float(ours[worst]):+.6f}, TransformerLens {float(theirs[worst]):+.6f})\n"
        + "\n".join(
            f"  {label:>14} {float(a):+.6f} {float(b):+.6f}"
            for label, a, b in zip(labels, ours, theirs, strict=True)
        )
    )
    return float(difference.max())


@pytest.mark.parametrize("foiled", FOILED)
@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("arch", ARCHS)
def test_transformer_lens_plain_mode_computes_the_plain_models_attribution(
    arch, variant, unit, foiled, tl_dla, reference, cases
):
    """The independent reference equals TransformerLens with only the final norm folded, and
    its bias term is the folded ``b_U`` that TransformerLens leaves out."""
    case = cases[(arch, variant)]
    worst = scale = 0.0
    for p, (row, found) in enumerate(
        zip(tl_dla(arch, variant, "plain"), reference(arch, variant, UNITS[unit]), strict=True)
    ):
        answer, foil = case["answers"][p], case["foils"][p] if FOILED[foiled] else None
        ours, bias = found.contributions(answer, foil)
        tl_labels = row[f"{unit}_labels"]
        theirs = merge_embeddings(tl_labels, row[f"{unit}_{foiled}"])
        mapped = to_transformer_lens(found.labels, ours, tl_labels)
        worst = max(worst, _assert_close(mapped, theirs, tl_labels, f"prompt {p}"))
        scale = max(scale, float(theirs.abs().max()))
        tl_bias = row["b_U"][answer] - (row["b_U"][foil] if foil is not None else 0.0)
        assert abs(bias - float(tl_bias)) <= BOUND, (p, bias, float(tl_bias))
        # TransformerLens's own numbers plus b_U are its model's logit (or logit difference).
        logit = row["logits"][answer] - (row["logits"][foil] if foil is not None else 0.0)
        assert abs(float(row[f"{unit}_{foiled}"].sum() + tl_bias - logit)) <= BOUND
    assert scale > SCALE_FLOOR, f"values too small ({scale:.3g}) for the bound to mean anything"
    print(f"reference vs TransformerLens plain {arch}/{variant}/{unit}/{foiled}: {worst:.2e}")


@pytest.mark.parametrize("foiled", FOILED)
@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("arch", ARCHS)
def test_transformer_lens_default_mode_is_the_plain_attribution_recentred(
    arch, variant, unit, foiled, tl_dla, reference, cases
):
    """``enable_compatibility_mode()``'s defaults, reconciled explicitly: the vocabulary mean of
    each component's contribution comes off the single-token case (``center_unembed``), and
    with heads each head's value-bias write moves to its layer's output bias
    (``fold_value_biases``); ``center_writing_weights`` changes nothing under a final norm
    that centres, and nothing at all under RMSNorm (TransformerLens skips it there)."""
    case = cases[(arch, variant)]
    worst = scale = moved = 0.0
    for p, (row, found) in enumerate(
        zip(tl_dla(arch, variant, "default"), reference(arch, variant, UNITS[unit]), strict=True)
    ):
        answer, foil = case["answers"][p], case["foils"][p] if FOILED[foiled] else None
        vectors = found.vectors.clone()
        if UNITS[unit]:
            for layer, writes in enumerate(found.value_bias_writes):
                for head, write in enumerate(writes):
                    vectors[found.labels.index(f"L{layer}.H{head}")] -= write
                vectors[found.labels.index(f"L{layer}.attn_bias")] += writes.sum(0)
            moved = max(moved, float(found.value_bias_writes.abs().max()))
        direction = found.unembed[:, answer]
        if foil is None:
            direction = direction - found.unembed.mean(-1)
        else:
            direction = direction - found.unembed[:, foil]
        ours = found.normalised(vectors) @ direction
        tl_labels = row[f"{unit}_labels"]
        theirs = merge_embeddings(tl_labels, row[f"{unit}_{foiled}"])
        mapped = to_transformer_lens(found.labels, ours, tl_labels)
        worst = max(worst, _assert_close(mapped, theirs, tl_labels, f"prompt {p}"))
        scale = max(scale, float(theirs.abs().max()))
        # Its b_U is centred over the vocabulary as well.
        tl_bias = float(row["b_U"][answer])
        assert abs(float(found.bias[answer] - found.bias.mean()) - tl_bias) <= BOUND
        if foil is None:
            # Not the plain numbers: the recentring is what made them equal.
            plain = to_transformer_lens(found.labels, found.contributions(answer)[0], tl_labels)
            assert float((plain - theirs).abs().max()) > 100 * BOUND
    if UNITS[unit] and variant == "affine":
        assert moved > 0.1  # the value biases are there to move
    assert scale > SCALE_FLOOR, f"values too small ({scale:.3g}) for the bound to mean anything"
    print(f"reference vs TransformerLens default {arch}/{variant}/{unit}/{foiled}: {worst:.2e}")


@pytest.fixture(scope="session")
def murano_dla(dla_folders, models):
    """``(arch, variant, heads, foiled) -> LogitLensResult`` of
    ``LogitLens(model, decompose=True, heads=heads)`` on all the prompts in one batch."""
    from murano_widgets import LogitLens, MuranoModel, PromptBatch

    loaded = {(arch, "plain"): model for arch, model in models.items()}
    found: dict = {}

    def get(arch: str, variant: str, heads: bool, foiled: bool):
        key = (arch, variant, heads, foiled)
        if key not in found:
            if (arch, variant) not in loaded:
                loaded[(arch, variant)] = MuranoModel(dla_folders[(arch, variant)])
            batch = PromptBatch(PROMPTS, answers=ANSWERS, foils=FOILS if foiled else None)
            step = LogitLens(loaded[(arch, variant)], decompose=True, heads=heads)
            found[key] = step({"prompts": batch})["logit_lens"]
        return found[key]

    return get


@pytest.mark.parametrize("foiled", FOILED)
@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("arch", ARCHS)
def test_answer_contributions_equal_transformer_lens(
    arch, variant, unit, foiled, murano_dla, tl_dla, reference, cases
):
    """``answer_contributions`` (summed into TransformerLens's units) equal its
    ``direct_logit_attribution``, ``answer_contribution_bias`` its folded ``b_U``, and the two
    together its model's logit (or logit difference)."""
    result = murano_dla(arch, variant, UNITS[unit], FOILED[foiled])
    case = cases[(arch, variant)]
    labels = result.component_labels
    # The contract's labels: those of the independent decomposition, in model order.
    assert labels == reference(arch, variant, UNITS[unit])[0].labels
    assert result.answer_contributions.shape == (len(labels), len(PROMPTS))
    assert result.answer_contribution_bias.shape == (len(PROMPTS),)
    worst = scale = 0.0
    for p, row in enumerate(tl_dla(arch, variant, "plain")):
        answer, foil = case["answers"][p], case["foils"][p] if FOILED[foiled] else None
        ours = result.answer_contributions[:, p].double()
        tl_labels = row[f"{unit}_labels"]
        theirs = merge_embeddings(tl_labels, row[f"{unit}_{foiled}"])
        mapped = to_transformer_lens(labels, ours, tl_labels)
        worst = max(worst, _assert_close(mapped, theirs, tl_labels, f"prompt {p}"))
        scale = max(scale, float(theirs.abs().max()))
        bias = float(result.answer_contribution_bias[p])
        tl_bias = float(row["b_U"][answer] - (row["b_U"][foil] if foil is not None else 0.0))
        assert abs(bias - tl_bias) <= BOUND, (p, bias, tl_bias)
        worst = max(worst, abs(bias - tl_bias))
        logit = float(row["logits"][answer] - (row["logits"][foil] if foil is not None else 0.0))
        assert abs(float(ours.sum()) + bias - logit) <= BOUND, (p, float(ours.sum()) + bias, logit)
    assert scale > SCALE_FLOOR, f"values too small ({scale:.3g}) for the bound to mean anything"
    print(f"murano vs TransformerLens {arch}/{variant}/{unit}/{foiled}: {worst:.2e}")


@pytest.mark.parametrize("foiled", FOILED)
@pytest.mark.parametrize("heads", [False, True], ids=["components", "heads"])
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("arch", ARCHS)
def test_answer_contributions_equal_the_reference_label_by_label(
    arch, variant, heads, foiled, murano_dla, reference, cases
):
    """Finer than TransformerLens's units (whose ``remainder`` lumps the embedding, the output
    biases and the MLPs together): every component of the contract against the independent
    decomposition, and the bias term."""
    result = murano_dla(arch, variant, heads, FOILED[foiled])
    case = cases[(arch, variant)]
    worst = 0.0
    for p, found in enumerate(reference(arch, variant, heads)):
        answer, foil = case["answers"][p], case["foils"][p] if FOILED[foiled] else None
        expected, bias = found.contributions(answer, foil)
        worst = max(
            worst,
            _assert_close(result.answer_contributions[:, p], expected, found.labels, f"prompt {p}"),
        )
        assert abs(float(result.answer_contribution_bias[p]) - bias) <= BOUND, p
    if heads and variant == "affine":
        # The output projections' biases are there, and count as their own components.
        biases = [i for i, label in enumerate(result.component_labels) if "attn_bias" in label]
        assert float(result.answer_contributions[biases].abs().max()) > 0.01
    print(
        f"murano vs reference {arch}/{variant}/{'heads' if heads else 'components'}/{foiled}: "
        f"{worst:.2e}"
    )
