"""The live lens widget: results combined and cut along the prompt axis, the session's runs,
patching, and the front end's message protocol (the README's "Live" section).

The reference for every combined or re-run result is one ``run_logit_lens`` call on all the
prompts (an independent computation: the step on the whole batch, not the code under test),
compared field by field; the patch is checked against ``patch_lens`` and against a patched
forward pass written in plain transformers (tests/test_patching.py's hooks). The protocol is
driven as the front end drives it: content dicts through the widget's message handler, the
replies captured by replacing the widget's ``send``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from notebook_cells import kernel_env
from reference import ReferenceLens
from test_patching import check_against_reference, ids_of, patched_run, source_value, teacher_forced
from tiny_models import CHAT_TEMPLATE

from murano_widgets import (
    LensResults,
    LogitLensResult,
    LogitLensWidget,
    MuranoModel,
    load_demo_model,
    load_demo_tuned_lens,
    patch_lens,
    show_logit_lens,
)
from murano_widgets.demo_model import DEMO_MODEL_PATH
from murano_widgets.live import LiveSession, concat_results, padding_of, select_prompts
from murano_widgets.payload.codec import section_bytes
from murano_widgets.payload.diff import diff_payload
from murano_widgets.payload.lens import LensPayload, decode_sections
from murano_widgets.results.result import AnswerScores
from murano_widgets.run import run_logit_lens
from murano_widgets.widgets.diff import LensDiffWidget

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
    elif name.endswith("ranks"):
        # A rank counts the tokens more probable: among the vocabulary's many near-equal tiny
        # probabilities, a difference of 1e-12 moves a rank in the hundreds by one. The top
        # ranks, where the probabilities stand apart, are exact.
        assert (got - expected).abs().max() <= 1, f"{where}{name} differs by more than 1"
        top = expected < 10
        assert torch.equal(got[top], expected[top]), f"{where}{name} differs at a top rank"
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


# ---------------------------------------------------------------------------------------------
# The session: one prompt run and appended, a selection, every prompt again for targets


@pytest.fixture(scope="module")
def demo_shown(demo):
    """The demo model's lens of the three prompts, rows 0 and 5 (shared, never changed)."""
    return run_logit_lens(demo, PROMPTS, layers=[0, 5])


@pytest.fixture
def no_model_work(monkeypatch):
    """Every way a live change reaches the model fails loudly: a check that comes after it
    would show as this error instead of its own."""

    def refuse(*args, **kwargs):
        raise AssertionError("model work happened before the arguments were checked")

    monkeypatch.setattr("murano_widgets.step.logit_lens.run_step", refuse)
    monkeypatch.setattr("murano_widgets.live.patching.patch_lens", refuse)
    monkeypatch.setattr("murano_widgets.live.session.generate_tokens", refuse)
    monkeypatch.setattr("murano_widgets.live.session.apply_chat", refuse)


def _runs_of(monkeypatch, session):
    """Records the number of prompts of each step run the session makes."""
    sizes = []
    real = session._run_inputs

    def counted(inputs, *args):
        sizes.append(len(inputs))
        return real(inputs, *args)

    monkeypatch.setattr(session, "_run_inputs", counted)
    return sizes


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
@pytest.mark.parametrize("model", ["demo", "llama_left", "gpt2_right"], indirect=True)
def test_a_prompt_added_equals_one_call_on_all(model, monkeypatch):
    """The new prompt alone runs (one step call of one prompt), and the result is one call on
    all four, with answers, targets and the new prompt's missing answer."""
    session = LiveSession(model, targets=[" Paris", "is"])
    shown = session.run(PROMPTS, answers=ANSWERS)
    sizes = _runs_of(monkeypatch, session)
    added = session.add(shown, NEW)
    assert sizes == [1]
    expected = run_logit_lens(
        model, [*PROMPTS, NEW], answers=[*ANSWERS, None], targets=[" Paris", "is"]
    )
    assert_same(added, expected)
    assert shown.n_inputs == 3  # the results shown are left as they were


def test_named_lenses_attribution_and_foils(demo):
    lenses = {"logit": None, "tuned": load_demo_tuned_lens(demo)}
    options = {"lens": lenses, "decompose": True, "kl_between_lenses": True}
    foils = [" Rome", None, " warm"]
    session = LiveSession(demo, **options)
    added = session.add(session.run(PROMPTS, answers=ANSWERS, foils=foils), NEW)
    expected = run_logit_lens(
        demo, [*PROMPTS, NEW], answers=[*ANSWERS, None], foils=[*foils, None], **options
    )
    assert_same(added, expected)
    assert added["tuned"].foils == [*foils, None]


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_targets_tokenized_otherwise_after_the_new_prompt(demo, monkeypatch):
    """Targets are tokenized as they follow the first prompt: where the new prompt alone would
    make other tokens of them, it runs beside the first one (and the result is still one
    call's)."""
    session = LiveSession(demo, targets=[" Rome", "day"])
    shown = session.run(PROMPTS, answers=ANSWERS)
    real = session._target_ids
    monkeypatch.setattr(
        session,
        "_target_ids",
        lambda prompt, targets: [[-5]] if prompt.text == NEW else real(prompt, targets),
    )
    sizes = _runs_of(monkeypatch, session)
    added = session.add(shown, NEW)
    assert sizes == [2]
    expected = run_logit_lens(
        demo, [*PROMPTS, NEW], answers=[*ANSWERS, None], targets=[" Rome", "day"]
    )
    assert_same(added, expected)


@pytest.mark.parametrize("model", ["demo", "gpt2_right"], indirect=True)
def test_a_prompt_removed_equals_one_call_without_it(model, monkeypatch):
    session = LiveSession(model, targets=[" Paris"])
    shown = session.run(PROMPTS, answers=ANSWERS)
    sizes = _runs_of(monkeypatch, session)
    for index in range(3):
        kept = [i for i in range(3) if i != index]
        expected = run_logit_lens(
            model, [PROMPTS[i] for i in kept], answers=_answers_of(kept), targets=[" Paris"]
        )
        assert_same(session.remove(shown, index), expected, f"without {index}: ")
    assert sizes == []  # a selection: no model work
    # The first prompt removed, and the targets tokenized otherwise after the new first one:
    # every prompt runs again.
    monkeypatch.setattr(session, "_target_ids", lambda prompt, targets: [[-5]])
    expected = run_logit_lens(model, PROMPTS[1:], answers=ANSWERS[1:], targets=[" Paris"])
    assert_same(session.remove(shown, 0), expected)
    assert sizes == [2]
    with pytest.raises(ValueError, match="index 0 is the last prompt"):
        session.remove(session.run([NEW]), 0)
    with pytest.raises(ValueError, match=r"index must be an int from 0 to 2 .*; got 3"):
        session.remove(shown, 3)


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_retargeting_equals_one_call_with_those_targets(demo, monkeypatch):
    session = LiveSession(demo)
    shown = session.run(PROMPTS, answers=ANSWERS)
    sizes = _runs_of(monkeypatch, session)
    tracked = session.retarget(shown, [" Rome", " cold"])
    assert_same(tracked, run_logit_lens(demo, PROMPTS, answers=ANSWERS, targets=[" Rome", " cold"]))
    untracked = session.retarget(tracked, None)
    assert_same(untracked, run_logit_lens(demo, PROMPTS, answers=ANSWERS))
    assert sizes == [3, 3]
    with pytest.raises(ValueError, match="holds ' Rome' twice"):
        session.retarget(shown, [" Rome", " Rome"])


def test_chats_add_a_chat_of_one_user_message(llama_left):
    chats = [
        [{"role": "user", "content": "The capital of France is"}],
        [
            {"role": "system", "content": "one two"},
            {"role": "user", "content": "Monday Tuesday"},
        ],
    ]
    session = LiveSession(llama_left)
    shown = session.run(chat=chats)
    added = session.add(shown, "Alice met Bob.")
    new_chat = [{"role": "user", "content": "Alice met Bob."}]
    assert_same(added, run_logit_lens(llama_left, chat=[*chats, new_chat]))
    assert added.token_roles[-1].count("user") > 0
    # From Python, a whole chat.
    whole = [{"role": "system", "content": "one"}, {"role": "user", "content": "two"}]
    assert_same(session.add(shown, whole), run_logit_lens(llama_left, chat=[*chats, whole]))
    with pytest.raises(TypeError, match="text must be a string"):
        LiveSession(llama_left).add(LiveSession(llama_left).run(["one two"]), whole)


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_generation_continues_the_new_prompt_and_is_not_run_again(demo, monkeypatch):
    session = LiveSession(demo, generate=3)
    shown = session.run(PROMPTS)
    added = session.add(shown, NEW)
    assert_same(added, run_logit_lens(demo, [*PROMPTS, NEW], generate=3))
    assert added.generated_texts[-1] and added.generation_starts[-1] == len(
        demo.tokenizer(NEW).input_ids
    )
    # Tracking reads the replies as they are: nothing is generated again.
    monkeypatch.setattr(
        "murano_widgets.live.session.generate_tokens",
        lambda *args: pytest.fail("generated again"),
    )
    assert_same(
        session.retarget(added, [" Rome"]),
        run_logit_lens(demo, [*PROMPTS, NEW], generate=3, targets=[" Rome"]),
    )


def test_session_arguments_are_checked_once(demo, no_model_work):
    with pytest.raises(TypeError, match=r"LiveSession takes no answers=: .*session.run"):
        LiveSession(demo, answers=[" Paris"])
    with pytest.raises(ValueError, match="layers holds 9, out of range"):
        LiveSession(demo, layers=[9])
    with pytest.raises(ValueError, match="generate= runs the model locally"):
        LiveSession(demo, generate=2, remote=True)
    with pytest.raises(ValueError, match="only apply to generation"):
        LiveSession(demo, seed=3)


def test_a_result_the_session_could_not_have_made_is_refused(demo):
    session = LiveSession(demo, layers=[0, 5])
    mine = session.run(PROMPTS[:1])
    assert session.check_result(mine) is mine
    for other, what in [
        (run_logit_lens(demo, PROMPTS[:1]), "rows"),
        (run_logit_lens(demo, PROMPTS[:1], layers=[0, 5], top_k=2), "top_k"),
        (run_logit_lens(demo, PROMPTS[:1], layers=[0, 5], generate=1), "generation"),
        (run_logit_lens(demo, PROMPTS[:1], layers=[0, 5], decompose=True), "decompose"),
    ]:
        with pytest.raises(ValueError, match=f"does not come from this session: its {what}"):
            session.check_result(other)


@pytest.mark.parametrize("bad", ["", "   ", None, 3, ["one"]])
def test_a_bad_prompt_is_refused_before_any_model_work(demo, demo_shown, bad, no_model_work):
    session = LiveSession(demo, layers=[0, 5])
    shown = demo_shown
    error = TypeError if not isinstance(bad, str) else ValueError
    with pytest.raises(error, match="text"):
        session.add(shown, bad)


# ---------------------------------------------------------------------------------------------
# Patching: patch_lens on a shown prompt, and the patched forward pass in plain transformers


def _patch_reference(model_name, tiny_model_dirs):
    folder = DEMO_MODEL_PATH if model_name == "demo" else tiny_model_dirs["llama"]
    return ReferenceLens(folder)


@pytest.mark.parametrize("model", ["demo", "llama_left"], indirect=True)
@pytest.mark.parametrize("source", ["zero", "mean", 2])
def test_patch_equals_patch_lens_and_a_patched_forward_pass(
    model, source, request, tiny_model_dirs
):
    """The session's patch is patch_lens on the prompt's text (the mean over every prompt
    shown; a prompt index as that prompt's text), and both runs, every comparison field and
    the answer's probability before and after equal a patched forward pass in plain
    transformers (tests/test_patching.py's hooks), within 1e-5."""
    session = LiveSession(model)
    shown = session.run(PROMPTS, answers=ANSWERS)
    layer, position = 1, 2
    comparison = session.patch(shown, prompt=0, layer=layer, position=position, source=source)
    text_source = PROMPTS[source] if isinstance(source, int) else source
    mean_over = PROMPTS if source == "mean" else None
    direct = patch_lens(
        model,
        PROMPTS[0],
        layer=layer,
        position=position,
        source=text_source,
        mean_over=mean_over,
        answers=[ANSWERS[0]],
    )
    for side in ("a", "b"):
        assert_same(getattr(comparison, side), getattr(direct, side), f"{side}: ")
    for name in ("delta_prob", "token_prob_a", "token_prob_b", "kl_a_to_b"):
        _close(name, getattr(comparison, name), getattr(direct, name), "")
    assert torch.equal(comparison.token, direct.token)
    assert comparison.patch == direct.patch

    ref = _patch_reference(request.node.callspec.params["model"], tiny_model_dirs)
    patch = {"position": position, "source": text_source, "mean_over": mean_over}
    _, _, at = check_against_reference(comparison, ref, PROMPTS[0], **patch)
    ids = ids_of(ref, PROMPTS[0])
    answer = ids_of(ref, PROMPTS[0] + ANSWERS[0])[len(ids) :]
    value = source_value(ref, PROMPTS[0], layer, position, text_source, mean_over=mean_over)
    before = teacher_forced(patched_run(ref, ids + answer, layer, at, None), len(ids), [answer])
    after = teacher_forced(patched_run(ref, ids + answer, layer, at, value), len(ids), [answer])
    # Improbable answers of a random model: relative error it is.
    torch.testing.assert_close(comparison.answer_probs_clean, before, atol=PROB_ATOL, rtol=1e-4)
    torch.testing.assert_close(comparison.answer_probs_patched, after, atol=PROB_ATOL, rtol=1e-4)
    assert comparison.answer_prob_patched == pytest.approx(
        float(after[-1]), abs=PROB_ATOL, rel=1e-4
    )
    assert abs(float(after[-1]) - float(before[-1])) > 1e-6 * float(before[-1])


def test_patch_reads_the_lens_shown(demo):
    tuned = load_demo_tuned_lens(demo)
    session = LiveSession(demo, lens={"logit": None, "tuned": tuned})
    shown = session.run(PROMPTS[:2])
    comparison = session.patch(
        shown, prompt=1, layer=0, position=1, source="zero", lens_name="tuned"
    )
    direct = patch_lens(demo, PROMPTS[1], layer=0, position=1, source="zero", lens=tuned)
    assert comparison.a.lens_kind == "tuned"
    for name in ("delta_prob", "kl_a_to_b"):
        _close(name, getattr(comparison, name), getattr(direct, name), "")
    with pytest.raises(ValueError, match=r"lens_name must be one of \['logit', 'tuned'\]"):
        session.patch(shown, prompt=1, layer=0, position=1, source="zero", lens_name="jacobian")


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"prompt": 3}, ValueError, r"prompt must be an int from 0 to 2 .*; got 3"),
        ({"layer": 1}, ValueError, r"layer must be one of the result's layers \[0, 5\]; got 1"),
        ({"layer": "0"}, TypeError, "layer must be an int"),
        ({"position": 5}, ValueError, r"position must be an int from 0 to 4 .*'The', .*got 5"),
        ({"position": -6}, ValueError, "position must be an int from 0 to 4"),
        ({"position": 1.0}, TypeError, "position must be an int"),
        ({"source": 3}, ValueError, r"source must be 'zero', 'mean' or a prompt index from 0 to 2"),
        ({"source": "one"}, ValueError, "source must be 'zero', 'mean' or a prompt index"),
        ({"source": True}, TypeError, "source must be"),
        (
            {"prompt": 2, "position": 5, "source": 1},
            ValueError,
            "position 5 is beyond source prompt 1's 4 real tokens",
        ),
    ],
)
def test_bad_patch_arguments_are_refused_before_any_model_work(
    demo, demo_shown, arguments, error, message, no_model_work
):
    session = LiveSession(demo, layers=[0, 5])
    shown = demo_shown
    patch = {"prompt": 0, "layer": 0, "position": 1, "source": "zero", **arguments}
    with pytest.raises(error, match=message):
        session.patch(shown, **patch)


def test_a_prompt_whose_text_reads_as_other_tokens_is_not_patched(demo, demo_shown, no_model_work):
    session = LiveSession(demo, layers=[0, 5])
    shown = select_prompts(demo_shown, [0, 1], padding_side="left")
    renamed = dataclasses.replace(shown, prompts=["The capital of", PROMPTS[1]])
    with pytest.raises(ValueError, match="prompt 0 cannot be patched: its tokens came from"):
        session.patch(renamed, prompt=0, layer=0, position=1, source="zero")


def test_a_source_prompt_that_reads_as_an_ablation_is_refused(demo, monkeypatch):
    session = LiveSession(demo, layers=[0, 5])
    shown = session.run([PROMPTS[0], "zero"])
    monkeypatch.setattr("murano_widgets.live.patching.patch_lens", pytest.fail)
    with pytest.raises(ValueError, match="source prompt 1 is the text 'zero'"):
        session.patch(shown, prompt=0, layer=0, position=0, source=1)


# ---------------------------------------------------------------------------------------------
# The widget: traits and Python calls


def test_show_logit_lens_is_live_and_a_result_alone_is_not(demo):
    widget = show_logit_lens(demo, PROMPTS[:2], targets=[" Rome"])
    assert widget.live and isinstance(widget.session, LiveSession)
    assert widget.prompts == PROMPTS[:2] and widget.targets == [" Rome"]
    assert widget.live_status == {"state": "idle", "request": -1, "action": "", "message": ""}
    assert widget.patch_info is None and widget.patched is None
    # The front end reads the patch as "patch" (the Python name "patch" is the method).
    state = widget.get_state()
    assert state["patch"] is None and "patch_info" not in state
    assert {"live", "prompts", "targets", "live_status", "_patch_meta", "_patch_sections"} <= set(
        state
    )
    with pytest.raises(Exception, match="read-only"):
        widget.prompts = ["x"]

    plain = LogitLensWidget(widget.result)
    assert not plain.live and plain.session is None
    for call in (
        lambda: plain.add_prompt(NEW),
        lambda: plain.remove_prompt(0),
        lambda: plain.track(" Paris"),
        lambda: plain.untrack(" Rome"),
        lambda: plain.patch(layer=0, position=0, source="zero"),
    ):
        with pytest.raises(RuntimeError, match=r"needs a model.*show_logit_lens\(model, \.\.\.\)"):
            call()
    plain.clear_patch()  # nothing to clear, and no model needed
    assert plain.patch_info is None
    with pytest.raises(TypeError, match="live must be a LiveSession"):
        LogitLensWidget(widget.result, live=True)
    with pytest.raises(ValueError, match="does not come from this session: its top_k"):
        LogitLensWidget(widget.result, live=LiveSession(demo, top_k=2))
    # A session of one's own.
    session = LiveSession(demo, layers=[0, 5])
    own = LogitLensWidget(session.run(PROMPTS[:1]), live=session)
    assert own.live and own.add_prompt(NEW) == 1


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_python_calls_change_what_is_shown(demo):
    """add_prompt, track, remove_prompt, untrack: each leaves w.result equal to one call on
    what is shown, the payload made from it, and the view where it was."""
    widget = show_logit_lens(demo, PROMPTS, answers=ANSWERS)
    widget.prompt = 1
    widget.selected = {"prompt": 2, "layer_index": 3, "position": 1}

    assert widget.add_prompt(NEW) == 3
    assert widget.prompt == 3 and widget.prompts == [*PROMPTS, NEW]
    assert_same(widget.result, run_logit_lens(demo, [*PROMPTS, NEW], answers=[*ANSWERS, None]))
    assert widget._meta == LensPayload.from_result(widget.result).meta
    assert widget.selected["prompt"] == 2 and widget.selected["layer_index"] == 3
    assert widget.live_status["state"] == "idle" and widget.live_status["request"] == -1

    widget.metric = "kl"
    widget.track(" Rome", show=False)
    widget.track(" Rome", show=False)  # tracked already: nothing to do
    assert widget.targets == [" Rome"]
    expected = run_logit_lens(demo, [*PROMPTS, NEW], answers=[*ANSWERS, None], targets=[" Rome"])
    assert_same(widget.result, expected)
    assert widget.metric == "kl" and widget.selected["targets"].keys() == {" Rome"}
    assert widget.target == " Rome"  # the first target, ready for the metric that shows it

    widget.remove_prompt(0)
    assert widget.prompts == [*PROMPTS[1:], NEW] and widget.prompt == 2
    assert widget.selected["prompt"] == 1  # the same cell, its prompt one lower
    expected = run_logit_lens(
        demo, [*PROMPTS[1:], NEW], answers=[*ANSWERS[1:], None], targets=[" Rome"]
    )
    assert_same(widget.result, expected)
    widget.selected = {"prompt": 0, "layer_index": 1, "position": 0}
    widget.remove_prompt(0)  # the pinned cell's prompt
    assert widget.selected is None and widget.prompt == 1

    widget.untrack(" Rome")
    assert widget.targets == []
    assert_same(widget.result, run_logit_lens(demo, [PROMPTS[2], NEW], answers=[ANSWERS[2], None]))
    # The answer goes with the last prompt that had one: the metric falls back.
    widget.metric = "answer"
    widget.remove_prompt(0)
    assert widget.result.answer_sets is None and widget.metric == "prob"
    assert widget._meta == LensPayload.from_result(widget.result).meta


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_tracking_shows_the_token_and_untracking_gives_way(demo, monkeypatch):
    """track (show=True by default) colours the heatmap by the token: ``target`` is it and
    ``metric`` "target", whose payload values are the result's target_probs; show=False leaves
    the colouring; an untracked token gives way to the one in its place."""
    widget = show_logit_lens(demo, PROMPTS[:2])
    runs = _runs_of(monkeypatch, widget.session)
    assert widget.target == "" and widget.metric == "prob"
    assert not widget.payload.metric("target")["available"]

    widget.track(" Rome")
    assert widget.targets == [" Rome"] and widget.target == " Rome"
    assert widget.metric == "target" and widget._details
    # What the heatmap is coloured by: the result's target_probs, within the quantisation step.
    values = decode_sections(widget._meta, widget._sections)["target_probs"]
    step = widget._meta["sections"]["target_probs"]["scale"]
    expected = widget.result.target_probs[:, widget.result.attention_mask.bool()].numpy()
    assert values.shape == expected.shape and values.shape[-1] == 1
    assert (expected > step).any()  # not a column of zeros
    stored = np.where((expected > 0) & (expected < step / 2), step, expected)
    np.testing.assert_allclose(values, stored, rtol=0, atol=step / 2 + 1e-12)

    widget.metric = "kl"
    widget.track(" Paris", show=False)
    assert widget.targets == [" Rome", " Paris"]
    assert widget.metric == "kl" and widget.target == " Rome"
    runs.clear()
    widget.track(" Paris")  # tracked already: shown, and nothing runs
    assert runs == [] and widget.metric == "target" and widget.target == " Paris"
    widget.track(" Madrid", show=False)
    assert widget.targets == [" Rome", " Paris", " Madrid"] and widget.target == " Paris"

    widget.untrack(" Paris")  # the token in its place is shown
    assert widget.targets == [" Rome", " Madrid"]
    assert widget.target == " Madrid" and widget.metric == "target"
    widget.target = " Rome"
    widget.untrack(" Madrid")  # another token: the shown one stays
    assert widget.target == " Rome"
    widget.track(" Madrid", show=False)
    widget.target = " Madrid"
    widget.untrack(" Madrid")  # the last one: the one before it
    assert widget.target == " Rome" and widget.metric == "target"
    widget.untrack(" Rome")  # none left: the colouring falls back too
    assert widget.targets == [] and widget.target == "" and widget.metric == "prob"
    assert widget._meta == LensPayload.from_result(widget.result).meta

    with pytest.raises(TypeError, match="show must be True or False, got str 'yes'"):
        widget.track(" Rome", show="yes")
    assert widget.targets == []


def test_a_text_of_several_tokens_is_refused_naming_its_tokens(demo, request):
    """Tracking counts one token at every cell: "Tokyo" (T + okyo) would be tracked as 'T'
    under the name "Tokyo", so it is refused before any model work, naming its tokens and the
    form that is one token; from the front end the refusal is the error reply the widget
    shows. A text of one token passes the check."""
    widget = show_logit_lens(demo, PROMPTS[:2])
    request.getfixturevalue("no_model_work")
    results = widget._live_results()
    assert widget.session.check_one_token(results, " Tokyo") == demo.tokenizer.encode(" Tokyo")[-1]
    with pytest.raises(
        ValueError,
        match=r"^'Tokyo' is 2 tokens here \('T' \+ 'okyo'\): a tracked text must be one token, "
        r"else only 'T' would be tracked\. ' Tokyo' \(with its leading space\) is one token: "
        r"track that\.$",
    ):
        widget.track("Tokyo")
    with pytest.raises(
        ValueError,
        match=r"^'New York City' is 7 tokens here \('N' \+ .*"
        r"Track one of its tokens, or score the whole text as an answer",
    ):
        widget.track("New York City")
    assert widget.targets == [] and widget.live_status["state"] == "error"

    replies, send = _front_end(widget)
    send(action="track", id=7, text="Tokyo", show=True)
    assert widget._live.worker.wait_idle(10)
    assert replies == [
        {
            "action": "error",
            "id": 7,
            "message": "'Tokyo' is 2 tokens here ('T' + 'okyo'): a tracked text "
            "must be one token, else only 'T' would be tracked. ' Tokyo' (with its leading "
            "space) is one token: track that.",
        }
    ]
    assert widget.targets == [] and widget.target == "" and widget.metric == "prob"


def test_the_front_ends_track_shows_the_token_when_asked(demo):
    widget = show_logit_lens(demo, PROMPTS[:1], targets=[" Rome"])
    replies, send = _front_end(widget)
    send(action="track", id=1, text=" Paris")  # show is False unless asked
    assert widget._live.worker.wait_idle(10)
    assert widget.targets == [" Rome", " Paris"]
    assert widget.metric == "prob" and widget.target == " Rome"
    send(action="track", id=2, text=" Madrid", show=True)
    assert widget._live.worker.wait_idle(10)
    assert widget.metric == "target" and widget.target == " Madrid"
    send(action="track", id=3, text=" Rome", show=True)  # tracked already: shown
    assert widget._live.worker.wait_idle(10)
    assert widget.target == " Rome" and widget.targets == [" Rome", " Paris", " Madrid"]
    send(action="track", id=4, text=" Oslo", show=1)
    assert widget._live.worker.wait_idle(10)
    assert [r["action"] for r in replies] == ["done", "done", "done", "error"]
    assert replies[3]["message"] == "Show must be True or False, got int 1."
    assert widget.targets == [" Rome", " Paris", " Madrid"]


def test_show_logit_lens_checks_the_target_before_the_model_runs(demo, no_model_work):
    with pytest.raises(ValueError, match=r"metric='target' shows a tracked token's .*targets="):
        show_logit_lens(demo, PROMPTS[:1], metric="target")
    with pytest.raises(
        ValueError, match=r"target must be one of the tracked tokens \[' Rome'\]; got ' Oslo'"
    ):
        show_logit_lens(demo, PROMPTS[:1], targets=[" Rome"], target=" Oslo")
    with pytest.raises(ValueError, match="target must be '' while no token is tracked"):
        show_logit_lens(demo, PROMPTS[:1], target=" Oslo")


def test_show_logit_lens_shows_the_target_asked_for(demo):
    widget = show_logit_lens(
        demo, PROMPTS[:1], targets=[" Rome", " Paris"], metric="target", target=" Paris"
    )
    assert widget.metric == "target" and widget.target == " Paris"
    assert widget._standalone_state()["target"] == " Paris"


def test_python_calls_name_what_is_wrong(demo):
    widget = show_logit_lens(demo, PROMPTS[:2])
    with pytest.raises(ValueError, match="text must be a non-empty string, got ''"):
        widget.add_prompt("")
    assert widget.live_status == {
        "state": "error",
        "request": -1,
        "action": "add_prompt",
        "message": "Text must be a non-empty string, got ''.",
    }
    with pytest.raises(ValueError, match=r"index must be an int from 0 to 1 .*; got 2"):
        widget.remove_prompt(2)
    with pytest.raises(ValueError, match="text is the empty string: a target needs"):
        widget.track("")
    with pytest.raises(TypeError, match="text must be a string"):
        widget.track(None)
    with pytest.raises(
        ValueError, match=r"text ' Rome' is not tracked; the tracked targets are \[\]"
    ):
        widget.untrack(" Rome")
    with pytest.raises(
        ValueError, match=r"layer must be from 0 to \d+ \(the result's layers\); got 9"
    ):
        widget.patch(layer=9, position=0, source="zero")
    widget.remove_prompt(1)
    with pytest.raises(ValueError, match="the last prompt"):
        widget.remove_prompt(0)
    assert widget.prompts == PROMPTS[:1]


def test_a_patch_is_shown_as_the_diff_widget_shows_it(demo):
    prompts = [PROMPTS[0], NEW, PROMPTS[1]]
    widget = show_logit_lens(demo, prompts, answers=[" Paris", " Rome", None])
    comparison = widget.patch(layer=0, position=3, source=1)
    assert widget.patched is comparison
    assert widget.patch_info == {
        "prompt": 0,
        "layer": 0,
        "position": 3,
        "source": 1,
        "answer": " Paris",
        "answer_prob_clean": comparison.answer_prob_clean,
        "answer_prob_patched": comparison.answer_prob_patched,
        "target": None,
        "target_prob_clean": None,
        "target_prob_patched": None,
    }
    # France -> Italy at layer 0: the model now says Rome.
    assert comparison.answer_prob_clean > 0.9 > 0.1 > comparison.answer_prob_patched
    direct = patch_lens(demo, prompts[0], layer=0, position=3, source=NEW, answers=[" Paris"])
    _close("delta_prob", comparison.delta_prob, direct.delta_prob, "")
    # Exactly what LensDiffWidget syncs for the comparison.
    diff = LensDiffWidget(comparison)
    assert widget._patch_meta == diff._meta and widget._patch_sections == diff._sections
    meta, arrays = diff_payload(comparison)
    assert widget._patch_sections == section_bytes(arrays) and widget._patch_meta == meta
    assert widget.get_state(["patch_info"]) == {"patch": widget.patch_info}

    # The shown prompt by default; a position from the end.
    widget.prompt = 2
    widget.patch(layer=1, position=-1, source="zero")
    assert widget.patch_info["prompt"] == 2 and widget.patch_info["position"] == 3
    assert widget.patch_info["answer"] is None and widget.patch_info["answer_prob_clean"] is None
    # The patch stays while what it reads stays: a prompt added, targets tracked, another
    # prompt removed (its indices move with the prompts).
    widget.patch(layer=0, position=3, source=1, prompt=0)
    widget.add_prompt("one two")
    widget.track(" Rome")
    widget.remove_prompt(2)
    assert widget.patch_info["prompt"] == 0 and widget.patch_info["source"] == 1
    assert widget.patched is not None
    widget.remove_prompt(1)  # its source
    assert widget.patch_info is None and widget.patched is None and widget._patch_meta == {}
    # A mean over the batch goes when the batch changes.
    widget.patch(layer=0, position=1, source="mean")
    widget.add_prompt("one")
    assert widget.patch_info is None
    widget.patch(layer=0, position=1, source="zero", prompt=0)
    widget.clear_patch()
    assert widget.patch_info is None and widget._patch_sections == {} and widget.patched is None


def test_a_patch_shows_its_prompt_and_follows_the_tracked_token(demo):
    """A patch of another prompt than the one shown moves the heatmap to it (from Python and
    from the front end), and with a token tracked but no answers the change follows that token,
    whose probability before and after (the model's own output at the prompt's last position)
    equals a patched forward pass in plain transformers (tests/test_patching.py's hooks)."""
    prompts = [PROMPTS[0], NEW]
    widget = show_logit_lens(demo, prompts, targets=[" Rome"], prompt=1)
    assert widget.metric == "prob"  # tracked, not the colouring: the change follows it anyway
    comparison = widget.patch(layer=0, position=3, source=1, prompt=0)
    assert widget.prompt == 0 and widget.patch_info["prompt"] == 0

    ref = ReferenceLens(DEMO_MODEL_PATH)
    rome = ref.tokenizer(" Rome", add_special_tokens=False)["input_ids"]
    assert len(rome) == 1
    ids = ids_of(ref, prompts[0])
    value = source_value(ref, prompts[0], 0, 3, prompts[1])
    before = patched_run(ref, ids, 0, 3, None)["model_probs"][-1, rome[0]]
    after = patched_run(ref, ids, 0, 3, value)["model_probs"][-1, rome[0]]
    info = widget.patch_info
    assert info["target"] == " Rome" and info["answer"] is None
    assert info["target_prob_clean"] == pytest.approx(float(before), abs=PROB_ATOL)
    assert info["target_prob_patched"] == pytest.approx(float(after), abs=PROB_ATOL)
    assert float(after) > 0.5 > 0.01 > float(before)  # France -> Italy: the model says Rome
    # Every cell's change is the tracked token's.
    assert (comparison.token == rome[0]).all()

    # The front end's request: the same, for the prompt its pinned cell is on.
    widget.prompt = 1
    replies, send = _front_end(widget)
    send(action="patch", id=1, prompt=0, layer=0, position=2, source="zero")
    assert widget._live.worker.wait_idle(10)
    assert [r["action"] for r in replies] == ["done"]
    assert widget.prompt == 0 and widget.patch_info["position"] == 2
    assert widget.patch_info["target"] == " Rome"

    # Nothing tracked: the clean run's own prediction, and no token's before and after.
    widget.untrack(" Rome")
    widget.patch(layer=0, position=3, source="zero", prompt=1)
    assert widget.prompt == 1
    assert widget.patch_info["target"] is None and widget.patch_info["target_prob_clean"] is None


def test_the_export_carries_the_live_state(demo):
    widget = show_logit_lens(demo, PROMPTS[:2], targets=[" Rome"])
    widget.patch(layer=0, position=1, source="zero")
    state = widget._standalone_state()
    assert state["live"] is True and state["prompts"] == PROMPTS[:2]
    assert state["targets"] == [" Rome"] and state["patch"] == widget.patch_info
    assert state["_patch_meta"] == widget._patch_meta
    assert {
        name: base64.b64decode(text) for name, text in state["_patch_sections"].items()
    } == widget._patch_sections
    page = widget.to_html()
    assert '"live":true' in page and '"_patch_meta"' in page
    plain = LogitLensWidget(widget.result)._standalone_state()
    assert plain["live"] is False and plain["patch"] is None and plain["_patch_sections"] == {}


# ---------------------------------------------------------------------------------------------
# The protocol, driven as the front end drives it


def _front_end(widget):
    """Replies the widget sends, and a function that sends it a message."""
    replies = []
    widget.send = replies.append

    def send(**content):
        widget._handle_custom_msg(content, [])

    return replies, send


def _hold_first(monkeypatch, widget, method="add"):
    """The session's ``method`` made to wait, on its first call, until released."""
    started, release = threading.Event(), threading.Event()
    calls = []
    real = getattr(widget.session, method)

    def held(results, *args, **kwargs):
        calls.append(args[0] if args else kwargs)
        if len(calls) == 1:
            started.set()
            assert release.wait(10), "never released"
        return real(results, *args, **kwargs)

    monkeypatch.setattr(widget.session, method, held)
    return started, release, calls


def test_hello_is_answered_at_once_while_the_model_runs(demo, monkeypatch):
    widget = show_logit_lens(demo, PROMPTS[:2])
    replies, send = _front_end(widget)
    started, release, _ = _hold_first(monkeypatch, widget)
    send(action="add_prompt", id=1, text=NEW)
    assert started.wait(10)
    assert widget.live_status == {
        "state": "running",
        "request": 1,
        "action": "add_prompt",
        "message": f"Running the lens on “{NEW}”…",
    }
    send(action="hello", id=2)
    assert replies == [{"action": "hello", "id": 2, "live": True}]
    # Slider traits are taken meanwhile.
    widget.layer = 2
    release.set()
    assert widget._live.worker.wait_idle(10)
    assert replies[1] == {"action": "done", "id": 1, "message": "Added prompt 2."}
    assert widget.prompts == [*PROMPTS[:2], NEW] and widget.prompt == 2 and widget.layer == 2
    assert widget.live_status["state"] == "idle"
    plain_replies, plain_send = _front_end(LogitLensWidget(widget.result))
    plain_send(action="hello", id=7)
    assert plain_replies == [{"action": "hello", "id": 7, "live": False}]


def test_a_newer_request_supersedes_an_older_one_of_its_action(demo, monkeypatch):
    """The running request's result is never applied, the queued one never runs, both are
    answered "superseded" at once; the newest is done."""
    widget = show_logit_lens(demo, PROMPTS[:2])
    replies, send = _front_end(widget)
    started, release, calls = _hold_first(monkeypatch, widget)
    send(action="add_prompt", id=1, text="The capital of Spain is")
    assert started.wait(10)
    send(action="add_prompt", id=2, text="one two")
    send(action="add_prompt", id=3, text=NEW)
    assert replies == [
        {"action": "superseded", "id": 1, "message": "superseded by request 2"},
        {"action": "superseded", "id": 2, "message": "superseded by request 3"},
    ]
    release.set()
    assert widget._live.worker.wait_idle(10)
    assert replies[2:] == [{"action": "done", "id": 3, "message": "Added prompt 2."}]
    # The first ran to its end, but only the newest shows; the second never ran.
    assert calls == ["The capital of Spain is", NEW]
    assert widget.prompts == [*PROMPTS[:2], NEW]
    assert_same(widget.result, run_logit_lens(demo, [*PROMPTS[:2], NEW]))


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_requests_of_different_actions_run_in_order(demo, monkeypatch):
    widget = show_logit_lens(demo, PROMPTS[:2])
    replies, send = _front_end(widget)
    started, release, _ = _hold_first(monkeypatch, widget)
    send(action="add_prompt", id=1, text=NEW)
    assert started.wait(10)
    send(action="track", id=2, text=" Rome", show=True)
    send(action="remove_prompt", id=3, index=0)
    send(action="patch", id=4, prompt=1, layer=0, position=-1, source="zero")
    release.set()
    assert widget._live.worker.wait_idle(10)
    assert [(r["action"], r["id"]) for r in replies] == [
        ("done", 1),
        ("done", 2),
        ("done", 3),
        ("done", 4),
    ]
    assert widget.prompts == [PROMPTS[1], NEW] and widget.targets == [" Rome"]
    assert_same(widget.result, run_logit_lens(demo, [PROMPTS[1], NEW], targets=[" Rome"]))
    assert widget.patch_info["prompt"] == 1 and widget.patched is not None
    send(action="clear_patch", id=5)
    assert widget._live.worker.wait_idle(10)
    assert replies[-1]["action"] == "done" and widget.patch_info is None


def test_errors_are_one_line_in_the_widget_and_a_traceback_in_the_log(demo, monkeypatch, caplog):
    widget = show_logit_lens(demo, PROMPTS[:2])
    replies, send = _front_end(widget)
    with caplog.at_level(logging.ERROR, logger="murano_widgets.live"):
        send(action="add_prompt", id=1, text="   ")
        assert widget._live.worker.wait_idle(10)
    # A refusal reads as a sentence: no exception class before it (the log has the traceback).
    line = "Text is only white space ('   '): a prompt needs at least one visible character."
    assert replies == [{"action": "error", "id": 1, "message": line}]
    assert widget.live_status == {
        "state": "error",
        "request": 1,
        "action": "add_prompt",
        "message": line,
    }
    (record,) = [r for r in caplog.records if r.name == "murano_widgets.live"]
    assert record.exc_info is not None and "request 1 (add_prompt) failed" in record.getMessage()

    def fails(results, text):
        raise RuntimeError("the model\nbroke\n  here")

    monkeypatch.setattr(widget.session, "add", fails)
    send(action="add_prompt", id=2, text=NEW)
    assert widget._live.worker.wait_idle(10)
    assert replies[-1] == {
        "action": "error",
        "id": 2,
        "message": "The model broke here.",
    }
    assert widget.prompts == PROMPTS[:2]  # nothing changed
    # The next request that works clears the error.
    send(action="track", id=3, text=" Paris")
    assert widget._live.worker.wait_idle(10)
    assert replies[-1]["action"] == "done" and widget.live_status["state"] == "idle"


def test_malformed_requests_are_answered_with_an_error(demo):
    widget = show_logit_lens(demo, PROMPTS[:1])
    replies, send = _front_end(widget)
    send(action="fly", id=1)
    send(action="add_prompt", id=2)
    send(action="add_prompt", id="3", text=NEW)
    widget._handle_custom_msg(["not", "a", "dict"], [])
    assert [r["id"] for r in replies] == [1, 2, "3"]
    assert all(r["action"] == "error" for r in replies)
    assert replies[0]["message"].startswith("Unknown action 'fly'; the actions are")
    assert replies[1]["message"] == "The add_prompt request lacks ['text']."
    assert replies[2]["message"] == "A request needs an int id, got '3'."
    assert widget.live_status["state"] == "error" and widget.prompts == PROMPTS[:1]
    plain_replies, plain_send = _front_end(LogitLensWidget(widget.result))
    plain_send(action="add_prompt", id=4, text=NEW)
    assert plain_replies[0]["action"] == "error"
    assert plain_replies[0]["message"].startswith("add_prompt needs a model")
    widget.close()
    send(action="add_prompt", id=5, text=NEW)
    assert replies[-1] == {
        "action": "error",
        "id": 5,
        "message": "The widget was closed: it takes no more requests.",
    }


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_a_python_call_waits_for_the_queue_and_never_runs_beside_it(demo, monkeypatch):
    widget = show_logit_lens(demo, PROMPTS[:2])
    replies, send = _front_end(widget)
    started, release, _ = _hold_first(monkeypatch, widget)
    running = []
    real_retarget = widget.session.retarget

    def retarget(results, targets):
        running.append(widget._live.worker._current)  # no request runs beside it
        return real_retarget(results, targets)

    monkeypatch.setattr(widget.session, "retarget", retarget)
    send(action="add_prompt", id=1, text=NEW)
    assert started.wait(10)
    threading.Timer(0.2, release.set).start()
    widget.track(" Rome")  # waits for the request, then runs here
    assert running == [None]
    assert replies == [{"action": "done", "id": 1, "message": "Added prompt 2."}]
    assert_same(widget.result, run_logit_lens(demo, [*PROMPTS[:2], NEW], targets=[" Rome"]))
    assert widget.live_status == {"state": "idle", "request": -1, "action": "track", "message": ""}


def test_trait_changes_from_the_worker_go_out_in_one_update(demo):
    """The worker thread's changes reach the comm as one state update (payload, prompts and
    the prompt shown together), then the reply; the comm's send is ipykernel's, safe from any
    thread (ipykernel >= 6 sends through its IOPub thread)."""
    widget = show_logit_lens(demo, PROMPTS[:2])
    sent = []
    widget.comm.send = lambda data=None, metadata=None, buffers=None: sent.append(
        (threading.current_thread(), data, buffers)
    )
    widget._handle_custom_msg({"action": "add_prompt", "id": 1, "text": NEW}, [])
    assert widget._live.worker.wait_idle(10)
    worker = widget._live.worker.thread
    updates = [data for thread, data, _ in sent if data["method"] == "update"]
    full = [u for u in updates if "_meta" in u["state"]]
    assert len(full) == 1
    assert {"_meta", "_sections", "prompts", "prompt"} <= set(full[0]["state"])
    assert full[0]["state"]["prompts"] == [*PROMPTS[:2], NEW]
    assert [thread for thread, data, _ in sent if data["method"] == "custom"] == [worker]
    customs = [data for _, data, _ in sent if data["method"] == "custom"]
    assert customs == [
        {"method": "custom", "content": {"action": "done", "id": 1, "message": "Added prompt 2."}}
    ]
    # The status: running, then idle once the queue is empty.
    states = [u["state"]["live_status"]["state"] for u in updates if "live_status" in u["state"]]
    assert states == ["running", "idle"]
    assert all(thread is worker for thread, data, _ in sent if "_meta" in data.get("state", {}))


# In a real kernel: the front end's request as a comm message on the shell channel, and what
# comes back on IOPub. In a child process: jupyter_client leaves an asyncio loop behind.
_KERNEL = r"""
import json, sys, time
from jupyter_client.manager import start_new_kernel

km, kc = start_new_kernel(kernel_name="python3", startup_timeout=120)
try:
    msg_id = kc.execute(
        "from murano_widgets import load_demo_model, show_logit_lens\n"
        "w = show_logit_lens(load_demo_model(), ['The capital of France is'])\n"
        "print('model id', w.model_id)"
    )
    comm_id = None
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if m["msg_type"] == "stream" and "model id" in m["content"]["text"]:
            comm_id = m["content"]["text"].split()[-1]
        if m["msg_type"] == "error":
            sys.exit("\n".join(m["content"]["traceback"]))
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle" and (
            m["parent_header"].get("msg_id") == msg_id
        ):
            break
    request = {"action": "add_prompt", "id": 1, "text": "The capital of Italy is"}
    content = {"comm_id": comm_id, "data": {"method": "custom", "content": request}}
    kc.shell_channel.send(kc.session.msg("comm_msg", content))
    seen = []
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if m["msg_type"] != "comm_msg" or m["content"]["comm_id"] != comm_id:
            continue
        data = m["content"]["data"]
        if data["method"] == "custom":
            seen.append({"custom": data["content"]})
        else:
            state = data["state"]
            seen.append({"update": sorted(state), "buffers": len(m["buffers"]),
                         "prompts": state.get("prompts"), "status": state.get("live_status")})
            if (state.get("live_status") or {}).get("state") in ("idle", "error"):
                break
    print(json.dumps(seen))
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
"""


def test_in_a_real_kernel_the_worker_threads_updates_reach_the_front_end(tmp_path):
    """ipykernel sends comm messages through its IOPub thread, so the worker thread's trait
    updates and replies reach the front end as the kernel's own do (checked here with the
    installed ipykernel, not assumed)."""
    env = kernel_env()  # offline, this checkout's package first
    done = subprocess.run(
        [sys.executable, "-c", _KERNEL],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    statuses = [item["status"]["state"] for item in seen if item.get("status")]
    assert statuses == ["running", "idle"], seen
    (shown,) = [item for item in seen if item.get("prompts")]
    assert shown["prompts"] == ["The capital of France is", "The capital of Italy is"]
    assert {"_meta", "_sections", "prompt", "prompts"} <= set(shown["update"])
    assert shown["buffers"] > 0  # the binary sections, as buffers
    assert {"custom": {"action": "done", "id": 1, "message": "Added prompt 1."}} in seen


# ---------------------------------------------------------------------------------------------
# One style for the status line: counted as Python indexes, tokens quoted one way

STATUS_CASES = json.loads(
    (Path(__file__).parent / "status_line_cases.json").read_text(encoding="utf-8")
)


def test_running_lines_are_worded_as_the_front_end_words_them():
    """The front end words a request's line until Python's arrives (js/src/heatmap/live/protocol.js,
    checked by node against the same table): the two must be one text, or the line changes
    style mid-run ("Tracking “␣Rome”…", then "tracking ' Rome'…")."""
    from murano_widgets.live.controller import LiveController
    from murano_widgets.tokens import quote_token

    for case in STATUS_CASES["quote"]:
        assert quote_token(case["text"], spaces=case["spaces"]) == case["quoted"], case
    for case in STATUS_CASES["running"]:
        line = LiveController._describe(case["action"], case["fields"])
        assert line == case["line"], case


def test_a_live_session_counts_prompts_as_python_does_and_quotes_tokens_one_way(demo):
    """Every status line of a session, as the widget shows them while each runs: the prompt
    named is the index passed in Python, the token quoted as the front end quotes it; a
    refusal is a sentence, with no exception class."""
    widget = show_logit_lens(demo, PROMPTS[:2], answers=[" Paris", " Rome"])
    seen: list[str] = []
    widget.observe(lambda change: seen.append(change["new"]["message"]), names="live_status")
    widget.track(" Rome")
    widget.patch(layer=0, position=3, source=1, prompt=0)
    widget.add_prompt("The capital of Spain is")
    widget.remove_prompt(2)
    with pytest.raises(ValueError):
        widget.remove_prompt(5)
    lines = [line for line in seen if line]
    assert lines[:4] == [
        "Tracking “␣Rome”…",
        "Patching prompt 0: block 0's output at position 3, with prompt 1's output…",
        "Running the lens on “The capital of Spain is”…",
        "Removing prompt 2…",
    ], lines
    refusal = lines[-1]
    assert refusal.startswith("Index must be an int from 0 to 1"), refusal
    assert "Error" not in refusal.split(" ")[0] and refusal.endswith("."), refusal
    assert not any(re.search(r"'\s?Rome'", line) for line in lines), lines
