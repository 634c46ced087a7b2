"""Answers and targets in the LogitLens step, against plain transformers with hooks.

The reference runs each prompt alone (no padding), with an answer's tokens appended for the
teacher-forced score, and reads the probabilities straight from every layer's full softmax.
"""

from __future__ import annotations

import math

import pytest
import torch
from reference import ReferenceLens

from murano_widgets import LogitLens, PromptBatch, Results
from murano_widgets.step.reductions import (
    Buffers,
    _count_above_by_cells,
    _count_above_by_search,
    count_above,
)

PROMPTS = ["The Eiffel Tower is in the city of", "one two", "Alice met Bob. Alice gave"]
# Single- and multi-token answers under the tiny byte-level tokenizer.
ANSWERS = [" Paris", [" Rome", " Paris"], " book"]


def run(model, prompts=PROMPTS, answers=None, **options):
    results = Results(prompts=PromptBatch(list(prompts), answers=answers))
    return LogitLens(model, **options)(results)["logit_lens"]


def encode(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def teacher_forced(reference, prompt, answer):
    """Per layer, the product of each answer token's probability where it is predicted."""
    prompt_ids = reference.tokenizer(prompt)["input_ids"]
    answer_ids = encode(reference.tokenizer, answer)
    probs = reference.probs_of_ids(prompt_ids + answer_ids)  # [layers, seq, vocab]
    start = len(prompt_ids) - 1
    factors = [probs[:, start + k, token] for k, token in enumerate(answer_ids)]
    return torch.stack(factors).prod(dim=0), probs[:, start], answer_ids[0]


@pytest.mark.parametrize("in_trace", [False, True])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_teacher_forced_answers_match_plain_transformers(
    arch, in_trace, load_tiny, tiny_model_dirs
):
    model = load_tiny(arch)
    reference = ReferenceLens(tiny_model_dirs[arch])
    lens = run(model, answers=ANSWERS, reduce_in_trace=in_trace)
    assert list(lens.answer_sets) == ["answer"]
    assert lens.answer_probs.shape == (model.n_layers, len(PROMPTS))
    for p, accepted in enumerate(ANSWERS):
        accepted = [accepted] if isinstance(accepted, str) else accepted
        expected = torch.zeros(model.n_layers)
        best_rank = torch.full((model.n_layers,), 10**9)
        for text in accepted:
            assert len(encode(reference.tokenizer, text)) >= 1
            prob, last, first = teacher_forced(reference, PROMPTS[p], text)
            expected += prob
            rank = (last > last[:, first : first + 1]).sum(-1)
            best_rank = torch.minimum(best_rank, rank)
        torch.testing.assert_close(lens.answer_probs[:, p], expected, atol=1e-6, rtol=1e-4)
        assert torch.equal(lens.answer_ranks[:, p], best_rank)
    # " Rome" and " book" are several tokens: their factors multiply below the first alone.
    assert len(encode(reference.tokenizer, " book")) > 1


def test_answers_do_not_change_what_is_shown(load_tiny):
    model = load_tiny("gpt2")
    plain = run(model)
    scored = run(model, answers=ANSWERS)
    assert torch.equal(plain.attention_mask, scored.attention_mask)
    assert torch.equal(plain.input_ids, scored.input_ids)
    for name in ("max_probs", "predicted_tokens", "entropy", "kl_to_final", "final_token_ranks"):
        torch.testing.assert_close(getattr(scored, name), getattr(plain, name), equal_nan=True)
    assert scored.input_words == plain.input_words


@pytest.mark.parametrize("side", ["left", "right"])
def test_answer_token_probs_cover_every_shown_cell(side, load_tiny, tiny_model_dirs):
    model = load_tiny("llama")
    reference = ReferenceLens(tiny_model_dirs["llama"])
    old = model.tokenizer.padding_side
    model.tokenizer.padding_side = side
    try:
        lens = run(model, answers=ANSWERS)
    finally:
        model.tokenizer.padding_side = old
    for p, accepted in enumerate(ANSWERS):
        accepted = [accepted] if isinstance(accepted, str) else accepted
        firsts = sorted({encode(reference.tokenizer, text)[0] for text in accepted})
        probs = reference.run(PROMPTS[p])["probs"]  # [layers, seq, vocab]
        positions = lens.positions(p)
        expected = probs[..., firsts].sum(-1)
        torch.testing.assert_close(
            lens.answer_token_probs[:, p, positions], expected, atol=1e-6, rtol=1e-4
        )
        first_probs = probs[..., firsts]
        ranks = torch.stack(
            [(probs > first_probs[..., j : j + 1]).sum(-1) for j in range(len(firsts))]
        ).amin(0)
        assert torch.equal(lens.answer_token_ranks[:, p, positions], ranks)
        # At the last position the first-token values are the answer's own ranks.
        assert torch.equal(lens.answer_token_ranks[:, p, positions[-1]], lens.answer_ranks[:, p])
        padding = lens.attention_mask[p] == 0
        assert torch.isnan(lens.answer_token_probs[:, p, padding]).all()
        assert (lens.answer_token_ranks[:, p, padding] == -1).all()


def test_targets_are_tracked_at_every_position(load_tiny, tiny_model_dirs):
    """Enough targets to take the histogram path of the rank count (more than a dozen)."""
    model = load_tiny("gpt2")
    reference = ReferenceLens(tiny_model_dirs["gpt2"])
    words = [reference.tokenizer.decode([i]) for i in range(40, 80)]
    targets = list(dict.fromkeys(w for w in words if len(encode(reference.tokenizer, w)) == 1))
    assert len(targets) > 20
    for in_trace in (False, True):
        lens = run(model, targets=targets, reduce_in_trace=in_trace)
        assert lens.targets == targets
        assert lens.target_probs.shape == (*lens.max_probs.shape, len(targets))
        ids = [encode(reference.tokenizer, t)[0] for t in targets]
        assert lens.target_token_ids == [[i] for i in ids]
        for p, prompt in enumerate(PROMPTS):
            probs = reference.run(prompt)["probs"]
            positions = lens.positions(p)
            expected = probs[..., ids]
            torch.testing.assert_close(
                lens.target_probs[:, p, positions], expected, atol=1e-6, rtol=1e-4
            )
            ranks = torch.stack(
                [(probs > expected[..., j : j + 1]).sum(-1) for j in range(len(ids))], dim=-1
            )
            assert torch.equal(lens.target_ranks[:, p, positions], ranks)


def test_variants_count_each_single_token_form_once(load_tiny, tiny_model_dirs):
    model = load_tiny("gpt2")
    reference = ReferenceLens(tiny_model_dirs["gpt2"])
    # " Alice" is one token, "Alice" is not: the variant adds nothing it cannot count once.
    with pytest.warns(UserWarning, match="only their first token"):  # " bob" is not one token
        lens = run(model, answers=[" alice", " Bob", " Alice"], variants=True, targets=[" bob"])
    tokenizer = reference.tokenizer
    alice, bob = encode(tokenizer, " Alice"), encode(tokenizer, " Bob")
    assert len(alice) == len(bob) == 1
    scores = lens.answer_sets["answer"]
    assert [alice[0]] in scores.token_ids[0]  # " alice" is several tokens; " Alice" one
    assert scores.token_ids[2].count(alice) == 1
    assert lens.target_token_ids[0][0] == encode(tokenizer, " bob")[0]
    assert bob[0] in lens.target_token_ids[0]
    probs = reference.run(PROMPTS[1])["probs"]
    columns = sorted(set(lens.target_token_ids[0]))
    positions = lens.positions(1)
    torch.testing.assert_close(
        lens.target_probs[:, 1, positions, 0], probs[..., columns].sum(-1), atol=1e-6, rtol=1e-4
    )


def test_named_answer_sets_and_prompts_without_an_answer(load_tiny, tiny_model_dirs):
    model = load_tiny("gpt2")
    reference = ReferenceLens(tiny_model_dirs["gpt2"])
    sets = {"english": [" Paris", None, " Bob"], "other": [" Rome", " two", None]}
    lens = run(model, answers=sets)
    assert list(lens.answer_sets) == ["english", "other"]
    assert lens.answers == [[" Paris"], None, [" Bob"]]  # the first set is the shortcut
    other = lens.answer_sets["other"]
    assert torch.isnan(other.probs[:, 2]).all() and (other.ranks[:, 2] == -1).all()
    assert torch.isnan(lens.answer_probs[:, 1]).all()
    expected, _, _ = teacher_forced(reference, PROMPTS[1], " two")
    torch.testing.assert_close(other.probs[:, 1], expected, atol=1e-6, rtol=1e-4)
    assert torch.isnan(other.token_probs[:, 2]).all()


def test_alternatives_that_share_a_prefix_or_need_their_own_row(load_tiny, tiny_model_dirs):
    model = load_tiny("gpt2")
    reference = ReferenceLens(tiny_model_dirs["gpt2"])
    accepted = [" book", " books", " Rome", " city"]  # several tokens each, some shared
    lens = run(model, prompts=PROMPTS[2:], answers=[accepted])
    expected = sum(teacher_forced(reference, PROMPTS[2], text)[0] for text in accepted)
    torch.testing.assert_close(lens.answer_probs[:, 0], expected, atol=1e-6, rtol=1e-4)


def test_chunking_does_not_change_answers_or_targets(load_tiny):
    model = load_tiny("llama")
    whole = run(model, answers=ANSWERS, targets=[" Paris", " Bob"])
    chunked = run(model, answers=ANSWERS, targets=[" Paris", " Bob"], max_chunk_bytes=4 * 320 * 3)
    for name in ("answer_probs", "answer_ranks", "answer_token_probs", "target_probs"):
        torch.testing.assert_close(getattr(chunked, name), getattr(whole, name), equal_nan=True)


def test_bad_answers_and_targets_are_named_before_any_work(load_tiny):
    model = load_tiny("gpt2")
    with pytest.raises(ValueError, match=r"answers has 1 entries for 3 prompts"):
        PromptBatch(PROMPTS, answers=[" Paris"])
    with pytest.raises(TypeError, match=r"answers must be a list .* got str"):
        PromptBatch(PROMPTS, answers=" Paris")
    with pytest.raises(
        TypeError, match=r"answers\[1\]\[1\]: expected a non-empty string, got 3 \(int\)"
    ):
        PromptBatch(PROMPTS, answers=[" a", [" b", 3], None])
    with pytest.raises(
        ValueError, match=r"answers\[0\]: expected a non-empty string, got '' \(the empty string\)"
    ):
        PromptBatch(PROMPTS, answers=["", None, None])
    with pytest.raises(ValueError, match=r"no answer for any prompt"):
        PromptBatch(PROMPTS, answers=[None, None, None])
    with pytest.raises(ValueError, match=r"answers\['x'\] has 2 entries"):
        PromptBatch(PROMPTS, answers={"x": [" a", " b"]})
    with pytest.raises(TypeError, match=r"targets must be a list of strings .* set"):
        LogitLens(model, targets={" a"})
    with pytest.raises(ValueError, match=r"targets holds ' a' twice"):
        LogitLens(model, targets=[" a", " a"])
    with pytest.raises(TypeError, match=r"variants must be"):
        LogitLens(model, variants="yes")


def test_a_multi_token_target_warns_that_its_first_token_is_tracked(load_tiny):
    with pytest.warns(UserWarning, match=r"only their first token"):
        lens = run(load_tiny("gpt2"), targets=[" Rome"])
    assert len(lens.target_token_ids[0]) == 1


@pytest.mark.parametrize("n", [3, 40, 200])
def test_count_above_is_exact_with_ties_and_rows_that_are_not_finite(n):
    torch.manual_seed(n)
    rows, vocab = 37, 3000
    z = torch.randn(rows, vocab) * 4
    z[0, :50] = z[0, 50]  # ties count in the token's favour
    z[1] = 1.5  # a constant row
    z[2, 7] = math.nan  # a row that is not finite: any count, but no crash
    z[3, 9] = math.inf
    z[4] = 1000 + torch.randn(vocab) * 1e-3  # far from 0 next to its spread
    z[5, ::2] = torch.randint(-3, 3, (vocab // 2,)).float()  # many equal values
    ids = torch.randint(0, vocab, (rows, n))
    ids[0, 0] = 50
    thresholds = z.gather(1, ids)
    got = count_above(z, thresholds, torch.empty_like(z), Buffers())
    expected = torch.stack([(z > thresholds[:, j : j + 1]).sum(1) for j in range(n)], dim=1)
    finite = torch.isfinite(z).all(dim=1)
    assert torch.equal(got[finite], expected[finite])
    assert (got[1] == 0).all()  # nothing is above a value in a constant row
    assert torch.equal(count_above(z, thresholds), got)  # without buffers
    # Both ways for many thresholds, whichever count_above picked for this shape: a search per
    # entry (accelerators, small vocabularies) and the cells (large vocabularies on a CPU).
    searched = _count_above_by_search(z[finite], thresholds[finite])
    assert torch.equal(searched, expected[finite])
    if n > 12:
        by_cells = _count_above_by_cells(z, thresholds, torch.empty_like(z), Buffers())
        assert torch.equal(by_cells[finite], expected[finite]) and (by_cells[1] == 0).all()


def test_payload_carries_answers_targets_and_the_answer_metric(load_tiny):
    from murano_widgets import show_logit_lens
    from murano_widgets.payload.lens import LensPayload, decode_sections

    model = load_tiny("gpt2")
    plain = run(model)
    # An answer the model predicts somewhere (one that reads as that same token after the
    # prompt), so that some cells are marked and others not.
    tokenizer = model.tokenizer
    prompt_ids = tokenizer(PROMPTS[0])["input_ids"]
    predicted = next(
        word
        for layer in plain.predicted_words
        for word in layer[0]
        if word
        and tokenizer(PROMPTS[0] + word)["input_ids"][len(prompt_ids) :]
        == tokenizer(word, add_special_tokens=False)["input_ids"][:1]
    )
    answers = [predicted, *ANSWERS[1:]]
    lens = run(model, answers={"a": answers, "b": [" Bob", None, " Alice"]}, targets=[" Paris"])
    payload = LensPayload.from_result(lens)
    meta = payload.meta
    assert [s["name"] for s in meta["answer_sets"]] == ["a", "b"]
    assert meta["answer_sets"][0]["answers"] == [predicted, " Rome", " book"]
    assert meta["answer_sets"][1]["answers"][1] is None
    assert meta["targets"] == [" Paris"]
    decoded = decode_sections(meta, payload.all_sections())
    for s, name in enumerate(["a", "b"]):
        expected = lens.answer_sets[name].probs.nan_to_num(0.0).numpy()
        assert abs(decoded["answer_probs"][..., s] - expected).max() <= 1 / 65535
    mask = lens.attention_mask.bool()
    predicted = lens.predicted_tokens[:, mask]
    prompt_of = torch.arange(3).repeat_interleave(torch.tensor(lens.lengths))
    firsts = lens.answer_sets["a"].first_token_ids
    marked = torch.tensor(
        [
            [int(t) in firsts[int(p)] for t, p in zip(row, prompt_of, strict=True)]
            for row in predicted
        ]
    )
    assert marked.any() and not marked.all()  # the check must see both kinds of cells
    assert (decoded["answer_top1"] == marked.numpy()).all()
    target = lens.target_probs[:, mask, 0].numpy()
    assert abs(decoded["target_probs"][..., 0] - target).max() <= 1 / 65535
    answer = payload.metric("answer")
    assert answer["available"] and answer["field"] == "answer_token_probs"
    without = LensPayload.from_result(plain)
    assert not without.metric("answer")["available"]
    assert "answers=" in without.metric("answer")["unavailable_reason"]
    assert "answer_top1" not in without.arrays and without.meta["answer_sets"] == []
    # One prompt as a string takes one answer as a string.
    widget = show_logit_lens(model, PROMPTS[0], answers=" Paris", metric="answer")
    assert widget._meta["answer_sets"][0]["answers"] == [" Paris"]


def test_describe_cell_reports_answers_and_targets(load_tiny):
    lens = run(load_tiny("gpt2"), answers=ANSWERS, targets=[" Paris"])
    last = lens.lengths[0] - 1
    cell = lens.describe_cell(0, 1, last)
    seq = cell["sequence_index"]
    assert cell["answers"]["answer"]["prob"] == pytest.approx(float(lens.answer_probs[1, 0]))
    assert cell["answers"]["answer"]["token_rank"] == int(lens.answer_token_ranks[1, 0, seq])
    assert cell["targets"][" Paris"]["prob"] == pytest.approx(
        float(lens.target_probs[1, 0, seq, 0])
    )
    assert "prob" not in lens.describe_cell(0, 1, 0)["answers"]["answer"]


def test_prompt_ids_are_read_as_given(load_tiny):
    model = load_tiny("gpt2")
    ids = [model.tokenizer(p)["input_ids"] for p in PROMPTS]
    step = LogitLens(model)
    given = step.run(PROMPTS, ANSWERS, prompt_ids=ids)
    tokenized = step.run(PROMPTS, ANSWERS)
    for name in ("max_probs", "answer_probs", "input_ids", "attention_mask"):
        torch.testing.assert_close(getattr(given, name), getattr(tokenized, name), equal_nan=True)
    # Ids that text would not tokenize to are read as they are.
    odd = [[5, 6, 7], *ids[1:]]
    assert step.run(PROMPTS, prompt_ids=odd).input_ids[0, -3:].tolist() == [5, 6, 7]
    with pytest.raises(ValueError, match=r"prompt_ids\[0\] must be a non-empty list of token ids"):
        step.run(PROMPTS, prompt_ids=[[], *ids[1:]])
    with pytest.raises(ValueError, match=r"prompt_ids\[1\] .* from 0 to 319"):
        step.run(PROMPTS, prompt_ids=[ids[0], [320], ids[2]])
    with pytest.raises(ValueError, match=r"prompt_ids must be a list of 3"):
        step.run(PROMPTS, prompt_ids=ids[:2])


@pytest.mark.parametrize("in_trace", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_last_positions_only_match_plain_transformers(side, in_trace, load_tiny, tiny_model_dirs):
    model = load_tiny("llama")
    reference = ReferenceLens(tiny_model_dirs["llama"])
    original = model.tokenizer.padding_side
    model.tokenizer.padding_side = side
    try:
        lens = run(
            model,
            answers=ANSWERS,
            targets=[" Paris", " the"],
            positions="last",
            reduce_in_trace=in_trace,
        )
    finally:
        model.tokenizer.padding_side = original
    for p, prompt in enumerate(PROMPTS):
        expected = reference.run(prompt)
        positions = lens.positions(p)
        last, before = positions[-1], positions[:-1]
        assert lens.input_ids[p, positions].tolist() == expected["input_ids"].tolist()
        torch.testing.assert_close(lens.max_probs[:, p, last], expected["max_probs"][:, -1])
        assert torch.equal(lens.predicted_tokens[:, p, last], expected["predicted_tokens"][:, -1])
        torch.testing.assert_close(
            lens.kl_to_final[:, p, last], expected["kl_to_final"][:, -1], atol=1e-5, rtol=1e-4
        )
        assert lens.final_tokens[p, last] == expected["final_tokens"][-1]
        probs = expected["probs"][:, -1]
        for t, target in enumerate([" Paris", " the"]):
            first = encode(reference.tokenizer, target)[0]
            torch.testing.assert_close(lens.target_probs[:, p, last, t], probs[:, first])
            rank = (probs > probs[:, first : first + 1]).sum(-1)
            assert torch.equal(lens.target_ranks[:, p, last, t], rank)
        accepted = [ANSWERS[p]] if isinstance(ANSWERS[p], str) else ANSWERS[p]
        score = sum(teacher_forced(reference, prompt, text)[0] for text in accepted)
        torch.testing.assert_close(lens.answer_probs[:, p], score, atol=1e-6, rtol=1e-4)
        # The answer's cell values where it is predicted: its first tokens' probability.
        firsts = sorted({encode(reference.tokenizer, text)[0] for text in accepted})
        torch.testing.assert_close(
            lens.answer_token_probs[:, p, last], probs[:, firsts].sum(-1), atol=1e-6, rtol=1e-4
        )
        assert torch.isnan(lens.answer_token_probs[:, p, before]).all()
        # The other cells were not reduced: they hold no value, as padding does.
        assert torch.isnan(lens.max_probs[:, p, before]).all()
        assert (lens.predicted_tokens[:, p, before] == -1).all()
        assert (lens.final_tokens[p, before] == -1).all()
        assert torch.isnan(lens.target_probs[:, p, before]).all()
    with pytest.raises(ValueError, match=r"positions must be 'all' or 'last', got 'first'"):
        LogitLens(model, positions="first")


def test_answers_may_come_as_any_ordered_column():
    import numpy as np

    batch = PromptBatch(PROMPTS, answers=(" a", None, [" b", " c"]))
    assert batch.answers["answer"] == [[" a"], None, [" b", " c"]]
    assert PromptBatch(PROMPTS, answers=np.array([" a", " b", " c"])).answers["answer"][2] == [" c"]
    with pytest.raises(TypeError, match=r"answers must be a list .* got set"):
        PromptBatch(PROMPTS, answers={" a", " b", " c"})
