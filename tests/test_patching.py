"""patch_lens: activation patching, zero and mean ablation, checked against a patched forward
pass written here in plain transformers (a forward hook on the decoder block that replaces the
output at one position; every block's output captured by hooks; final norm + lm_head per
layer), one prompt at a time, no padding."""

from __future__ import annotations

import math

import pytest
import torch
from numerics import assert_same_choice, assert_same_numbers
from reference import ReferenceLens

from murano_widgets import MuranoModel, load_demo_model, patch_lens, show_lens_diff
from murano_widgets.comparison.patching import PatchComparison
from murano_widgets.demo_model import DEMO_MODEL_PATH
from murano_widgets.metrics import DIFF_CHANGES

LN2 = math.log(2.0)
PROMPT = "The capital of France is"
LONGER = "The capital of Italy is Rome and the capital of"  # pads the prompt
SHORTER = "one two"  # padded by the prompt
ATOL = 1e-5


# ---------------------------------------------------------------------------------------------
# The reference: plain transformers, one prompt at a time


def _hidden(output):
    return output[0] if isinstance(output, tuple) else output


def block_output(ref: ReferenceLens, text: str, layer: int) -> torch.Tensor:
    """``[seq, d]`` block ``layer``'s output on ``text`` alone."""
    seen = {}

    def keep(_module, _inputs, output):
        seen["h"] = _hidden(output)[0].clone()  # returns None: the output stays as it is

    handle = ref.blocks[layer].register_forward_hook(keep)
    try:
        with torch.no_grad():
            ref.model(**ref.tokenizer(text, return_tensors="pt", return_token_type_ids=False))
    finally:
        handle.remove()
    return seen["h"]


def ids_of(ref: ReferenceLens, text: str) -> list[int]:
    return ref.tokenizer(text, return_token_type_ids=False)["input_ids"]


def patched_run(ref, ids, layer, position, value):
    """Every layer's lens over ``ids`` with block ``layer``'s output at ``position`` replaced
    by ``value`` (``None``: no patch): ReferenceLens's own hooks, norm and lm_head."""

    def replace(_module, _inputs, output):
        hidden = _hidden(output).clone()
        hidden[0, position] = value
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    handle = None if value is None else ref.blocks[layer].register_forward_hook(replace)
    try:
        with torch.no_grad():
            return ref._run({"input_ids": torch.tensor([ids])})
    finally:
        if handle is not None:
            handle.remove()


def source_value(ref, prompt, layer, position, source, source_position=None, mean_over=None):
    """What goes into the patched cell, computed from plain block outputs."""
    if source == "zero":
        return torch.zeros(block_output(ref, prompt, layer).shape[-1])
    if source == "mean":
        over = mean_over or [prompt]
        return torch.cat([block_output(ref, text, layer) for text in over]).mean(0)
    states = block_output(ref, source, layer)
    return states[(position if source_position is None else source_position) % len(states)]


def teacher_forced(run, n_prompt: int, sequences: list[list[int]]) -> torch.Tensor:
    """``[layers]`` the summed probability of the answer's token sequences, each the product of
    the layer's probabilities of its tokens, predicted from the prompt's last position on."""
    probs = run["probs"]
    total = torch.zeros(probs.shape[0], dtype=torch.float64)
    for sequence in sequences:
        p = torch.ones(probs.shape[0], dtype=torch.float64)
        for i, token in enumerate(sequence):
            p = p * probs[:, n_prompt - 1 + i, token].double()
        total += p
    return total.float()


def kl_bits(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ q) in bits along the last axis, by its definition."""
    return (p * (p.clamp_min(1e-45).log() - q.clamp_min(1e-45).log())).sum(-1) / LN2


def check_against_reference(comparison: PatchComparison, ref: ReferenceLens, prompt: str, **patch):
    """Both results and every comparison field against the reference runs."""
    layer, source = comparison.patch.layer, patch["source"]
    ids = ids_of(ref, prompt)
    n = len(ids)
    position = patch["position"] % n
    value = source_value(
        ref,
        prompt,
        layer,
        patch["position"],
        source,
        patch.get("source_position"),
        patch.get("mean_over"),
    )
    clean = patched_run(ref, ids, layer, position, None)
    patched = patched_run(ref, ids, layer, position, value)
    rows = comparison.layers
    for side, run in (("a", clean), ("b", patched)):
        result = getattr(comparison, side)
        assert result.input_ids[0].tolist() == ids
        for name in ("max_probs", "final_token_probs"):
            torch.testing.assert_close(
                getattr(result, name)[:, 0],
                run[name][rows],
                atol=ATOL,
                rtol=0,
                msg=lambda m, name=name, side=side: f"{side}.{name}: {m}",
            )
        torch.testing.assert_close(
            result.topk_probs[:, 0], run["topk_probs"][rows], atol=ATOL, rtol=0
        )
        # Bits, not probabilities: their size is a few bits, so 1e-4 here is relative 1e-5.
        for name in ("entropy", "kl_to_final"):
            torch.testing.assert_close(
                getattr(result, name)[:, 0], run[name][rows], atol=1e-4, rtol=0
            )
        assert torch.equal(result.final_tokens[0], run["final_tokens"])
    # The comparison: the clean run's own prediction, its probability on both sides, the KL.
    token = clean["final_tokens"]
    assert torch.equal(comparison.token[0], token)
    index = token.expand(len(rows), -1).unsqueeze(-1)
    p_clean = clean["probs"][rows].gather(-1, index).squeeze(-1)
    p_patched = patched["probs"][rows].gather(-1, index).squeeze(-1)
    torch.testing.assert_close(comparison.token_prob_a[:, 0], p_clean, atol=ATOL, rtol=0)
    torch.testing.assert_close(comparison.token_prob_b[:, 0], p_patched, atol=ATOL, rtol=0)
    torch.testing.assert_close(comparison.delta_prob[:, 0], p_patched - p_clean, atol=ATOL, rtol=0)
    torch.testing.assert_close(
        comparison.kl_a_to_b[:, 0],
        kl_bits(clean["probs"][rows], patched["probs"][rows]),
        atol=1e-4,
        rtol=0,
    )
    assert comparison.aligned.all()
    return clean, patched, position


def check_causal_cone(comparison: PatchComparison) -> None:
    """Rows below the patched layer (their own lens) and positions before the patched one
    (every field) are the clean run's; the patched cell itself changed.

    The clean and patched rows are one computation at two rows of one batch, which is equal
    up to rounding, not bit for bit: MKL's AVX2 GEMM rounds a row by where it falls in its
    block (tests/numerics.py), so floats compare within ``ACROSS_SHAPES`` and token ids
    exactly but for near-ties."""
    a, b, patch = comparison.a, comparison.b, comparison.patch
    below = torch.tensor([layer < patch.layer for layer in comparison.layers])
    _check_same(a, b, lambda x: x[below], "below the patched layer")
    if patch.position == 0:
        return _check_changed(comparison)
    before = slice(0, patch.position)
    _check_same(a, b, lambda x: x[:, :, before], "before the patched position")
    for name in ("final_token_probs", "kl_to_final"):
        assert_same_numbers(getattr(b, name)[:, :, before], getattr(a, name)[:, :, before], name)
    # The final token's rank is exact: it moves only where two logits are within rounding
    # of each other, which no cell of these tests is (measured on three CPU kernels).
    assert torch.equal(a.final_token_ranks[:, :, before], b.final_token_ranks[:, :, before])
    outside = below.view(-1, 1, 1) | (torch.arange(a.max_probs.shape[-1]) < patch.position)
    assert comparison.kl_a_to_b[outside].abs().max() <= 1e-6
    assert comparison.delta_prob[outside].abs().max() <= 1e-6
    _check_metric_changes(comparison, outside, before)
    _check_changed(comparison)


def _held(result) -> dict:
    """The heatmap metrics' changes a run holds: every one, less the logit difference's
    without foils."""
    return {
        name: metric
        for name, metric in DIFF_CHANGES.items()
        if not metric.needs or getattr(result, metric.field) is not None
    }


def _check_metric_changes(comparison: PatchComparison, outside, before) -> None:
    """Each heatmap metric's change (the same derivation as any comparison's): the patched
    run's field minus the clean one's, cell by cell on the one grid; none outside the causal
    cone (a final-based metric's only before the patched position: each run's final prediction
    is its own, and the patch reaches the last layer)."""
    a, b = comparison.a, comparison.b
    assert set(comparison.metric_deltas) == set(_held(a))
    for name, delta in comparison.metric_deltas.items():
        metric = DIFF_CHANGES[name]
        expected = getattr(b, metric.field).float() - getattr(a, metric.field).float()
        expected = expected.masked_fill(~comparison.aligned, float("nan"))
        torch.testing.assert_close(delta, expected, equal_nan=True, atol=0, rtol=0)
        untouched = delta[:, :, before] if metric.final_based else delta[outside]
        assert untouched.abs().max() <= 1e-4, name


def _check_same(a, b, pick, where: str) -> None:
    """One cell's own lens fields are the same in ``a`` and ``b`` at the picked cells."""
    for name in ("max_probs", "topk_probs", "entropy"):
        assert_same_numbers(pick(getattr(b, name)), pick(getattr(a, name)), f"{name} {where}")
    ranked = pick(a.topk_probs)
    assert_same_choice(pick(b.topk_tokens), pick(a.topk_tokens), ranked, f"topk_tokens {where}")
    assert_same_choice(
        pick(b.predicted_tokens), pick(a.predicted_tokens), ranked, f"predicted_tokens {where}"
    )


def _check_changed(comparison: PatchComparison) -> None:
    """The patched cell itself reads differently (the patch did something)."""
    patch = comparison.patch
    if patch.layer in comparison.layers:
        row = comparison.layers.index(patch.layer)
        assert comparison.kl_a_to_b[row, 0, patch.position] > 1e-4


# ---------------------------------------------------------------------------------------------
# Against the reference: tiny GPT-2 and Llama (right padding, no pad token), the demo model
# (left padding), every source


SOURCES = [
    pytest.param({"source": LONGER}, id="prompt-longer"),
    pytest.param({"source": SHORTER, "position": 1, "source_position": -1}, id="prompt-shorter"),
    pytest.param({"source": "zero"}, id="zero"),
    pytest.param({"source": "mean"}, id="mean-of-itself"),
    pytest.param({"source": "mean", "mean_over": [LONGER, SHORTER]}, id="mean-over-prompts"),
]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("options", SOURCES)
def test_patched_lens_equals_a_patched_forward_pass(arch, options, load_tiny, tiny_model_dirs):
    model = load_tiny(arch)
    ref = ReferenceLens(tiny_model_dirs[arch])
    patch = {"layer": 1, "position": -2, **options}
    comparison = patch_lens(model, PROMPT, **patch)
    assert isinstance(comparison, PatchComparison)
    check_against_reference(comparison, ref, PROMPT, **patch)
    check_causal_cone(comparison)


@pytest.mark.parametrize("layer", [0, 2])
def test_first_and_last_layer_and_the_first_position(layer, load_tiny, tiny_model_dirs):
    model = load_tiny("llama")
    ref = ReferenceLens(tiny_model_dirs["llama"])
    patch = {"layer": layer, "position": 0, "source": LONGER, "source_position": -1}
    comparison = patch_lens(model, PROMPT, **patch)
    check_against_reference(comparison, ref, PROMPT, **patch)
    check_causal_cone(comparison)


def test_answers_before_and_after_teacher_forced_on_every_row(load_tiny, tiny_model_dirs):
    """Two multi-token answers in two named sets: the step feeds the second in a model row of
    its own (one per copy of the prompt), and the patched copy's extra row is patched too; each
    answer's whole probability before and after, per layer."""
    from murano_widgets.step.inputs import plan_inputs

    model = load_tiny("gpt2")
    ref = ReferenceLens(tiny_model_dirs["gpt2"])
    answers = {"paris": [" Paris and"], "rome": [" Rome and the"]}
    patch = {"layer": 1, "position": -2, "source": LONGER}
    comparison = patch_lens(model, PROMPT, answers=answers, **patch)
    batch = [PROMPT, PROMPT, LONGER]
    plan = plan_inputs(
        model.tokenizer, batch, {k: [v, v, None] for k, v in answers.items()}, None, False
    )
    assert plan.row_prompt == [0, 1, 2, 0, 1]  # an extra row for each copy

    ids = ids_of(ref, PROMPT)
    n = len(ids)
    value = source_value(ref, PROMPT, 1, -2, LONGER)
    for name, (text,) in answers.items():
        sequence = ids_of(ref, PROMPT + text)[n:]
        assert ids_of(ref, PROMPT + text)[:n] == ids and len(sequence) > 1
        for side, patched in (("a", None), ("b", value)):
            expected = teacher_forced(
                patched_run(ref, ids + sequence, 1, n - 2, patched), n, [sequence]
            )
            got = getattr(comparison, side).answer_sets[name].probs[:, 0]
            # The tiny model's answers are improbable (1e-10 to 1e-20): relative error it is.
            torch.testing.assert_close(got, expected, atol=0, rtol=1e-4, msg=f"{side} {name}")
        before = comparison.a.answer_sets[name].probs[-1, 0]
        after = comparison.b.answer_sets[name].probs[-1, 0]
        assert abs(after / before - 1) > 0.05, name
    # The first set's shortcuts: per layer, and the model's own (the last layer's row).
    assert torch.equal(comparison.answer_probs_clean, comparison.a.answer_sets["paris"].probs[:, 0])
    assert torch.equal(
        comparison.answer_probs_patched, comparison.b.answer_sets["paris"].probs[:, 0]
    )
    assert comparison.answer_prob_clean == float(comparison.answer_probs_clean[-1])
    assert comparison.answer_prob_patched == float(comparison.answer_probs_patched[-1])
    assert "answer ' Paris and'" in repr(comparison)
    check_causal_cone(comparison)
    # Without the last layer among the rows, there is no model's own probability to give.
    some = patch_lens(model, PROMPT, answers=[" Paris"], layers=[0, 1], **patch)
    assert some.answer_prob_clean is None and some.answer_probs_clean.shape == (2,)
    assert patch_lens(model, PROMPT, **patch).answer_probs_clean is None


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"source": "The capital of Italy is"}, id="prompt"),
        pytest.param({"source": "zero"}, id="zero"),
        pytest.param({"source": "mean"}, id="mean"),
    ],
)
def test_demo_model(options):
    """The shipped model (Llama-shaped, left padding), the answer's probability before and
    after. France -> Italy at layer 0 turns the answer from Paris to Rome."""
    model = load_demo_model()
    ref = ReferenceLens(DEMO_MODEL_PATH)
    patch = {"layer": 0, "position": -2, **options}
    comparison = patch_lens(model, "The capital of France is", answers=[" Paris"], **patch)
    _, _, position = check_against_reference(comparison, ref, "The capital of France is", **patch)
    check_causal_cone(comparison)
    ids = ids_of(ref, "The capital of France is")
    (answer,) = [ids_of(ref, "The capital of France is Paris")[len(ids) :]]
    value = source_value(ref, "The capital of France is", 0, -2, options["source"])
    before = teacher_forced(patched_run(ref, ids + answer, 0, position, None), len(ids), [answer])
    after = teacher_forced(patched_run(ref, ids + answer, 0, position, value), len(ids), [answer])
    torch.testing.assert_close(comparison.answer_probs_clean, before, atol=ATOL, rtol=0)
    torch.testing.assert_close(comparison.answer_probs_patched, after, atol=ATOL, rtol=0)
    if options["source"] == "The capital of Italy is":
        assert comparison.answer_prob_clean > 0.9 > 0.1 > comparison.answer_prob_patched
        assert comparison.b.predicted_words[-1][0][-1] == " Rome"


def test_in_trace_reduction_and_the_nnsight_backend_give_the_same(tiny_model_dirs, load_tiny):
    """What remote=True runs (the patch and the pair reduction inside the trace), locally, and
    the plain-nnsight backend (the one NDIF takes): the same numbers as the default path."""
    patch = {"layer": 1, "position": -3, "source": LONGER, "answers": [" Paris"]}
    base = patch_lens(load_tiny("llama"), PROMPT, **patch)
    in_trace = patch_lens(load_tiny("llama"), PROMPT, reduce_in_trace=True, **patch)
    plain = MuranoModel(tiny_model_dirs["llama"], backend="nnsight")
    other = patch_lens(plain, PROMPT, **patch)
    for each in (in_trace, other):
        for name in ("delta_prob", "token_prob_a", "token_prob_b", "kl_a_to_b"):
            torch.testing.assert_close(getattr(each, name), getattr(base, name), atol=1e-6, rtol=0)
        for side in ("a", "b"):
            for name in ("max_probs", "topk_probs", "kl_to_final"):
                torch.testing.assert_close(
                    getattr(getattr(each, side), name),
                    getattr(getattr(base, side), name),
                    atol=1e-6,
                    rtol=0,
                )
            assert torch.equal(getattr(each, side).topk_tokens, getattr(base, side).topk_tokens)
        assert each.answer_prob_patched == pytest.approx(base.answer_prob_patched, abs=1e-6)
        assert torch.equal(each.token, base.token)


def test_a_chosen_token_a_subset_of_layers_and_a_lens(load_tiny, tiny_model_dirs):
    """token= follows one token everywhere (known at every cell, also where neither run has it
    in its top-k); layers= reads some rows only (the patch may sit below them); lens= reads
    both runs through the same lens."""
    from murano_widgets import JacobianLens

    model = load_tiny("gpt2")
    ref = ReferenceLens(tiny_model_dirs["gpt2"])
    token = ref.tokenizer.encode(" Paris")
    assert len(token) == 1
    comparison = patch_lens(
        model, PROMPT, layer=0, position=-2, source="zero", token=" Paris", layers=[1, 2], top_k=1
    )
    assert comparison.layers == [1, 2]
    assert comparison.token_rule == "token ' Paris'"
    ids = ids_of(ref, PROMPT)
    value = torch.zeros(32)
    clean = patched_run(ref, ids, 0, len(ids) - 2, None)
    patched = patched_run(ref, ids, 0, len(ids) - 2, value)
    torch.testing.assert_close(
        comparison.token_prob_b[:, 0], patched["probs"][[1, 2], :, token[0]], atol=ATOL, rtol=0
    )
    torch.testing.assert_close(
        comparison.token_prob_a[:, 0], clean["probs"][[1, 2], :, token[0]], atol=ATOL, rtol=0
    )
    assert torch.isfinite(comparison.delta_prob).all()
    assert comparison.a.token_strings[token[0]] == " Paris"

    generator = torch.Generator().manual_seed(0)
    matrices = {
        layer: torch.eye(32) + 0.3 * torch.randn(32, 32, generator=generator) / 32**0.5
        for layer in range(2)
    }
    read = patch_lens(
        model, PROMPT, layer=0, position=-2, source="zero", lens=JacobianLens(matrices, n_prompts=1)
    )
    assert read.a.lens_kind == read.b.lens_kind == "jacobian"
    for side, is_patched in (("a", False), ("b", True)):
        hooked = None
        if is_patched:
            hooked = ref.blocks[0].register_forward_hook(
                lambda _m, _i, out: _zero_at(out, len(ids) - 2)
            )
        try:
            with torch.no_grad():
                lensed = ref._run({"input_ids": torch.tensor([ids])}, jacobians=matrices)
        finally:
            if hooked is not None:
                hooked.remove()
        result = getattr(read, side)
        torch.testing.assert_close(result.max_probs[:, 0], lensed["max_probs"], atol=ATOL, rtol=0)
        torch.testing.assert_close(result.topk_probs[:, 0], lensed["topk_probs"], atol=ATOL, rtol=0)


def _zero_at(output, position):
    hidden = _hidden(output).clone()
    hidden[0, position] = 0
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden


# ---------------------------------------------------------------------------------------------
# The widget and the description


def test_show_lens_diff_takes_it_as_it_is(tmp_path):
    model = load_demo_model()
    comparison = patch_lens(
        model,
        "The capital of France is",
        layer=0,
        position=-2,
        source="The capital of Italy is",
        answers=[" Paris"],
    )
    widget = show_lens_diff(comparison)
    assert widget.metric == "delta_prob"
    meta = widget._meta
    assert meta["labels"][0] == "clean" and meta["labels"][1].startswith("patched (L0")
    assert "replaced by prompt B's at position 3 (' Italy')" in meta["alignment_note"]
    assert meta["source"] == "patched run"
    assert {m["name"]: m["available"] for m in meta["metrics"]} == {
        "delta_prob": True,
        "kl": True,
        "top1_differs": True,
        **dict.fromkeys(_held(comparison.a), True),
    }
    widget.metric = "kl"
    widget.selected = {"prompt": 0, "layer_index": 5, "position": 4}
    assert widget.selected["delta_prob"] < -0.5
    # The patched run's entropy there minus the clean one's, as the two results hold them.
    widget.metric = "delta_entropy"
    entropy = comparison.b.entropy[5, 0, 4] - comparison.a.entropy[5, 0, 4]
    assert widget.selected["delta_entropy"] == pytest.approx(float(entropy))
    path = tmp_path / "patch.html"
    widget.save_html(path)
    assert "lens_diff" in path.read_text()
    patch = comparison.patch
    assert (patch.layer, patch.position, patch.source) == (0, 3, "prompt")
    assert (patch.token, patch.source_token, patch.source_position) == (" France", " Italy", 3)


# ---------------------------------------------------------------------------------------------
# Bad arguments: every one refused before any model work, naming the argument


BAD = [
    ({"prompt": [PROMPT]}, TypeError, "prompt must be one string"),
    ({"prompt": "  "}, ValueError, "prompt is empty or only white space"),
    (
        {"layer": 3},
        ValueError,
        "layer is 3, out of range for a model with 3 layers (allowed: -3 to 2",
    ),
    ({"layer": -4}, ValueError, "layer is -4"),
    ({"layer": 1.0}, TypeError, "layer must be an int, got float"),
    ({"layer": True}, TypeError, "layer must be an int, got bool"),
    (
        {"position": 8},
        ValueError,
        "position is 8, out of range for the prompt's 8 tokens (allowed: -8 to 7",
    ),
    ({"position": -9}, ValueError, "position is -9"),
    ({"position": "3"}, TypeError, "position must be an int"),
    ({"source": 0}, TypeError, "source must be a prompt (a non-empty string), 'zero' or 'mean'"),
    ({"source": None}, TypeError, "source must be"),
    ({"source": " "}, ValueError, "source is empty"),
    (
        {"source": SHORTER, "position": 5},
        ValueError,
        "source_position is 5 (the default: position), out of range for the source prompt's 5 tokens",
    ),
    ({"source": SHORTER, "source_position": 7}, ValueError, "source_position is 7, out of range"),
    ({"source": SHORTER, "source_position": 1.5}, TypeError, "source_position must be an int"),
    (
        {"source": "zero", "source_position": 1},
        ValueError,
        "source_position is the position in a source prompt",
    ),
    ({"source": "zero", "mean_over": [SHORTER]}, ValueError, "mean_over says what source='mean'"),
    ({"source": "mean", "mean_over": []}, ValueError, "mean_over is empty"),
    (
        {"source": "mean", "mean_over": [SHORTER, ""]},
        ValueError,
        "mean_over[1]: expected a non-empty string, got ''",
    ),
    ({"lens": {"logit": None}}, TypeError, "lens must be None (the logit lens) or one"),
    ({"lens": "folder"}, TypeError, "lens must be None"),
    ({"answers": " Paris"}, TypeError, "for one prompt write"),
    ({"answers": [" Paris", " Rome"]}, ValueError, "answers"),
    ({"answers": [""]}, ValueError, "answers"),
    ({"token": " Paris and"}, ValueError, "token ' Paris and' is 4 tokens to this tokenizer"),
    ({"token": 10**6}, ValueError, "token must be an int from 0 to 319"),
    ({"token": 1.0}, TypeError, "token must be None"),
    ({"layers": "some"}, ValueError, "layers must be 'all'"),
    ({"layers": [5]}, ValueError, "layers holds 5"),
    ({"top_k": 0}, ValueError, "top_k"),
    ({"max_chunk_bytes": 0}, ValueError, "max_chunk_bytes"),
    ({"remote": "yes"}, TypeError, "remote"),
]


@pytest.mark.parametrize(("change", "error", "message"), BAD)
def test_bad_arguments_are_refused_before_any_model_work(
    change, error, message, load_tiny, monkeypatch
):
    model = load_tiny("gpt2")

    def no_trace(*_args, **_kwargs):
        raise AssertionError("the model ran")

    monkeypatch.setattr(model, "trace", no_trace)
    arguments = {"prompt": PROMPT, "layer": 1, "position": -2, "source": LONGER, **change}
    prompt = arguments.pop("prompt")
    with pytest.raises(error) as caught:
        patch_lens(model, prompt, **arguments)
    assert message in str(caught.value)


def test_a_model_that_is_not_one_is_refused():
    with pytest.raises(TypeError, match="model"):
        patch_lens("gpt2", PROMPT, layer=0, position=0, source="zero")


def test_a_step_path_without_the_patch_is_an_error(load_tiny, monkeypatch):
    """Should a step path read the block outputs without running the intervention (a plain
    forward pass), patch_lens says so rather than return the clean run twice."""
    from murano_widgets.step import trace

    original = trace.read_states

    def without_intervention(config, states, take, intervention=None):
        original(config, states, take, None)

    monkeypatch.setattr(trace, "read_states", without_intervention)
    with pytest.raises(RuntimeError, match="without running the patch"):
        patch_lens(load_tiny("gpt2"), PROMPT, layer=1, position=-2, source="zero")
