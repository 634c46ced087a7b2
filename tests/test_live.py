"""The live lens widget: results combined and cut along the prompt axis, the session's runs,
patching, and the front end's message protocol (notes/live_protocol.md).

The reference for every combined or re-run result is one ``run_logit_lens`` call on all the
prompts (an independent computation: the step on the whole batch, not the code under test),
compared field by field; the patch is checked against ``patch_lens`` and against a patched
forward pass written in plain transformers (tests/test_patching.py's hooks). The protocol is
driven as the front end drives it: content dicts through the widget's message handler, the
replies captured by replacing the widget's ``send``.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from tiny_models import CHAT_TEMPLATE

from murano_widgets import (
    LensResults,
    LogitLensResult,
    MuranoModel,
    load_demo_model,
    load_demo_tuned_lens,
)
from murano_widgets.live import combine as combine_module
from murano_widgets.live import concat_results, padding_of, select_prompts
from murano_widgets.result import AnswerScores
from murano_widgets.run import run_logit_lens

PROMPTS = ["The capital of France is", "Monday, Tuesday,", "The opposite of hot is a word"]
ANSWERS = [" Paris", None, " cold"]
NEW = "The capital of Italy is"
PROB_ATOL = 1e-5
# Bits and logits run to tens: 1e-5 of them, relative.
RTOL = 1e-5


# ---------------------------------------------------------------------------------------------
# Models and the field-by-field comparison


@pytest.fixture(scope="module")
def demo():
    """The shipped model: Llama-shaped, left padding."""
    return load_demo_model()


@pytest.fixture(scope="module")
def llama_left(tiny_model_dirs):
    """A tiny random Llama of its own (the shared one stays as it is), padded on the left, with
    a small chat template."""
    model = MuranoModel(tiny_model_dirs["llama"])
    model.tokenizer.padding_side = "left"
    model.tokenizer.chat_template = CHAT_TEMPLATE
    return model


@pytest.fixture(scope="module")
def gpt2_right(tiny_model_dirs):
    """A tiny random GPT-2 of its own, padded on the right (nnsight pads on the left)."""
    model = MuranoModel(tiny_model_dirs["gpt2"])
    model.tokenizer.padding_side = "right"
    return model


@pytest.fixture(params=["demo", "llama_left", "gpt2_right"])
def model(request):
    return request.getfixturevalue(request.param)


def _close(name: str, got: torch.Tensor, expected: torch.Tensor, where: str) -> None:
    assert isinstance(got, torch.Tensor), f"{where}{name}: {type(got).__name__}"
    assert got.shape == expected.shape and got.dtype == expected.dtype, (
        f"{where}{name}: {tuple(got.shape)} {got.dtype} against {tuple(expected.shape)} "
        f"{expected.dtype}"
    )
    if got.is_floating_point():
        # NaN exactly where the one call has NaN (padding, no answer), close elsewhere.
        assert torch.equal(got.isnan(), expected.isnan()), f"{where}{name}: NaN elsewhere"
        torch.testing.assert_close(
            got,
            expected,
            atol=PROB_ATOL,
            rtol=RTOL,
            equal_nan=True,
            msg=lambda m: f"{where}{name}: {m}",
        )
    else:
        assert torch.equal(got, expected), f"{where}{name} differs"


def assert_same(got, expected, where: str = "") -> None:
    """Every field of two results (or of every lens of two LensResults) the same: tensors
    within the tolerances (ids, ranks and masks equal), everything else equal."""
    if isinstance(expected, LensResults):
        assert isinstance(got, LensResults) and got.names == expected.names
        for name in expected.names:
            assert_same(got[name], expected[name], f"{where}lens {name!r}: ")
        assert (got.kl_between is None) == (expected.kl_between is None)
        for pair, values in (expected.kl_between or {}).items():
            _close(f"kl_between{pair}", got.kl_between[pair], values, where)
        return
    assert isinstance(got, LogitLensResult), type(got)
    for field in dataclasses.fields(LogitLensResult):
        mine, theirs = getattr(got, field.name), getattr(expected, field.name)
        if isinstance(theirs, torch.Tensor):
            _close(field.name, mine, theirs, where)
        elif field.name == "answer_sets" and theirs is not None:
            assert mine is not None and list(mine) == list(theirs), f"{where}answer_sets"
            for name, scores in theirs.items():
                for part in dataclasses.fields(AnswerScores):
                    a, b = getattr(mine[name], part.name), getattr(scores, part.name)
                    if isinstance(b, torch.Tensor):
                        _close(f"answer_sets[{name!r}].{part.name}", a, b, where)
                    else:
                        assert a == b, f"{where}answer_sets[{name!r}].{part.name}: {a} != {b}"
        else:
            assert mine == theirs, f"{where}{field.name}: {mine!r:.200} != {theirs!r:.200}"


def _answers_of(indices):
    chosen = [ANSWERS[i] for i in indices]
    return chosen if any(chosen) else None


# ---------------------------------------------------------------------------------------------
# combine: concat_results and select_prompts against one call


OPTIONS = {
    "plain": {},
    "targets": {"targets": [" Paris", "Rome"], "top_k": 3},
    "decompose": {"decompose": True, "targets": [" Rome"]},
    "full-probs": {"store_full_probs": True, "variants": True, "targets": [" cold"]},
    "mid-rows": {"sites": ("resid_mid", "resid_post"), "layers": [0, -1]},
}


def _cases(models_options):
    return [
        pytest.param(model, OPTIONS[name], id=f"{model}-{name}")
        for model, names in models_options
        for name in names
    ]


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
@pytest.mark.parametrize(
    ("model", "options"),
    # Every option on the demo model; the tiny models (padded left and right) some of them.
    _cases(
        [
            ("demo", list(OPTIONS)),
            ("llama_left", ["plain", "decompose"]),
            ("gpt2_right", ["targets", "decompose"]),
        ]
    ),
    indirect=["model"],
)
def test_combined_single_prompts_equal_one_call_on_all(model, options):
    """Each prompt run alone (answers where it has one), combined: every field as one call on
    all three gives it, padding on the tokenizer's side included."""
    side, pad_id = padding_of(model.tokenizer)
    expected = run_logit_lens(model, PROMPTS, answers=ANSWERS, **options)
    parts = [
        run_logit_lens(model, [prompt], answers=None if answer is None else [answer], **options)
        for prompt, answer in zip(PROMPTS, ANSWERS, strict=True)
    ]
    combined = concat_results(parts, padding_side=side, pad_id=pad_id)
    assert_same(combined, expected)
    # Padding is really exercised: the prompts differ in length.
    assert len(set(expected.lengths)) > 1
    # Two parts of several prompts each combine the same way.
    halves = [
        run_logit_lens(model, PROMPTS[:2], answers=ANSWERS[:2], **options),
        run_logit_lens(model, PROMPTS[2:], answers=ANSWERS[2:], **options),
    ]
    assert_same(concat_results(halves, padding_side=side, pad_id=pad_id), expected)


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
@pytest.mark.parametrize(
    ("model", "options"),
    _cases(
        [("demo", ["plain", "decompose"]), ("llama_left", ["targets"]), ("gpt2_right", ["plain"])]
    ),
    indirect=["model"],
)
def test_a_selection_equals_one_call_without_the_others(model, options):
    """Removing a prompt is a selection: equal to the call without it (the sequence axis cut
    to the longest prompt left; the answers dropped when no prompt left has one)."""
    side, _ = padding_of(model.tokenizer)
    full = run_logit_lens(model, PROMPTS, answers=ANSWERS, **options)
    for chosen in ([1, 2], [0, 1], [0, 2], [1], [2, 0]):
        expected = run_logit_lens(
            model, [PROMPTS[i] for i in chosen], answers=_answers_of(chosen), **options
        )
        assert_same(select_prompts(full, chosen, padding_side=side), expected, f"{chosen}: ")
    assert select_prompts(full, [1], padding_side=side).answer_sets is None


def test_several_lenses_with_kl_between_them(demo):
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(demo)}
    options = {"lens": lenses, "kl_between_lenses": True, "targets": [" Rome"]}
    side, pad_id = padding_of(demo.tokenizer)
    expected = run_logit_lens(demo, PROMPTS, answers=ANSWERS, **options)
    parts = [
        run_logit_lens(demo, [prompt], answers=None if answer is None else [answer], **options)
        for prompt, answer in zip(PROMPTS, ANSWERS, strict=True)
    ]
    assert_same(concat_results(parts, padding_side=side, pad_id=pad_id), expected)
    assert_same(
        select_prompts(expected, [0, 2], padding_side=side),
        run_logit_lens(demo, [PROMPTS[0], PROMPTS[2]], answers=_answers_of([0, 2]), **options),
    )


def test_every_result_field_is_listed():
    """A field added to LogitLensResult must be given a place in combine's tables (else the
    functions refuse results that carry it): none is forgotten, none listed twice."""
    names = [field.name for field in dataclasses.fields(LogitLensResult)]
    tables = [
        combine_module._TENSORS,
        combine_module._WORDS,
        combine_module._PER_PROMPT,
        combine_module._SAME,
        combine_module._OWN,
    ]
    listed = [name for table in tables for name in table]
    assert sorted(listed) == sorted(names)


def test_combine_refuses_what_one_call_could_not_make(demo, llama_left):
    side, pad_id = padding_of(demo.tokenizer)
    one = run_logit_lens(demo, [PROMPTS[0]])
    refused = [
        (run_logit_lens(demo, [PROMPTS[1]], top_k=3), "topk_tokens: its shapes"),
        (run_logit_lens(demo, [PROMPTS[1]], targets=[" Rome"]), "different targets"),
        (run_logit_lens(demo, [PROMPTS[1]], layers=[0, 1]), "different addresses"),
        (run_logit_lens(demo, [PROMPTS[1]], generate=1), "parts [1] have generated_texts"),
        (run_logit_lens(demo, [PROMPTS[1]], decompose=True), "different component_labels"),
        (run_logit_lens(llama_left, [PROMPTS[1]]), "different addresses"),
    ]
    for other, why in refused:
        with pytest.raises(ValueError, match="cannot combine") as caught:
            concat_results([one, other], padding_side=side, pad_id=pad_id)
        assert why in str(caught.value), (why, caught.value)
    with pytest.raises(ValueError, match="padded on the left, but padding_side='right'"):
        concat_results([run_logit_lens(demo, PROMPTS[:2])], padding_side="right", pad_id=pad_id)
    with pytest.raises(TypeError, match="all of one kind"):
        concat_results([one, LensResults({"logit": one})], padding_side=side, pad_id=pad_id)
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right'"):
        select_prompts(one, [0], padding_side="middle")
    with pytest.raises(ValueError, match="from 0 to 0"):
        select_prompts(one, [1], padding_side=side)
    with pytest.raises(ValueError, match="at least one prompt"):
        select_prompts(one, [], padding_side=side)
    # The parts are left as they were.
    assert one.n_inputs == 1 and one.attention_mask.shape[1] == len(
        demo.tokenizer(PROMPTS[0]).input_ids
    )
